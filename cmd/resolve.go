package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/srm"
)

// ResolveOptions are the flags and arguments of `aso resolve`.
type ResolveOptions struct {
	Sites       string
	Destination string
	JSON        bool
	Site, LFN   string
}

// AddFlags registers the flags of `aso resolve`.
func (o *ResolveOptions) AddFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.Sites, "sites", "", "sites file (YAML or JSON): each site's protocol and LFN-to-PFN rules, inline or from storage.xml/storage.json")
	cmd.Flags().StringVar(&o.Destination, "destination", "", "the destination site of the transfer (for either end), for rules with a destination-match")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print {site, lfn, destination, pfn} as one JSON line")
}

func newResolveCommand(g *Globals) *cobra.Command {
	o := &ResolveOptions{}
	cmd := &cobra.Command{
		Use:   "resolve SITE LFN",
		Short: "Print the PFN of an LFN at a site, as the agent resolves it",
		Long: "resolve applies SITE's lfn-to-pfn rules from the sites file (--sites or ASO_SITES)\n" +
			"to LFN with the site's protocol and prints the PFN. Rules with a destination-match\n" +
			"are evaluated against --destination. Exits 1 if no rule matches.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Site, o.LFN = args[0], args[1]
			return runResolve(cmd.Context(), o, g)
		},
	}
	o.AddFlags(cmd)
	return cmd
}

func runResolve(_ context.Context, o *ResolveOptions, g *Globals) error {
	sites, err := openSites(o.Sites)
	if err != nil {
		return err
	}
	pfn, err := sites.ResolveFor(o.Site, o.LFN, o.Destination)
	if errors.Is(err, srm.ErrUnknownSite) {
		return usagef("%v; sites in %s: %s", err, o.Sites, strings.Join(sites.Names(), ", "))
	}
	if err != nil {
		return err
	}
	if o.JSON {
		return newJSONLines(g.Stdout).write(ResolveOutcome{Site: o.Site, LFN: o.LFN, Destination: o.Destination, PFN: pfn})
	}
	_, err = fmt.Fprintln(g.Stdout, pfn)
	return err
}

// ResolveOutcome is what `aso resolve --json` prints.
type ResolveOutcome struct {
	Site        string `json:"site"`
	LFN         string `json:"lfn"`
	Destination string `json:"destination,omitempty"`
	PFN         string `json:"pfn"`
}

// openSites loads the sites file a --sites flag names.
func openSites(path string) (*srm.Sites, error) {
	if path == "" {
		return nil, usagef("no sites file: give --sites FILE or set ASO_SITES")
	}
	return srm.LoadSites(path)
}
