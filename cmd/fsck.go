package cmd

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/internal/outputs"
	"github.com/asyncstageout/aso/state/memfile"
)

// FsckOptions are the flags of `aso fsck`.
type FsckOptions struct {
	Repair bool
	Output string
	JSON   bool
}

// AddFlags registers the flags of `aso fsck`.
func (o *FsckOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.Repair, "repair", false, "write what can be read of a damaged file into a new file (--output), saying what was dropped")
	f.StringVar(&o.Output, "output", "", "the new file of --repair (default: the state file's path + .repaired); it must not exist, and must not be the store through a link")
	f.BoolVar(&o.JSON, "json", false, "print the report as one JSON object")
}

func newFsckCommand(g *Globals) *cobra.Command {
	o := &FsckOptions{}
	cmd := &cobra.Command{
		Use:   "fsck [--repair]",
		Short: "Check a file store for damage, and salvage a damaged one into a new file",
		Long: "fsck reads the file store (--state file:PATH) to the end, past any damage, and reports\n" +
			"each damaged record (every record carries a checksum) and the transfers it makes unreadable.\n" +
			"Exits 1 if the file is damaged; every other command refuses a damaged store (exit 78). A\n" +
			"journal record cut short at the end of the file by a crash during its append is not damage:\n" +
			"it is shown, and the next command that writes drops it with a warning. --repair writes every\n" +
			"document that can be read, each in its last readable version, into a new file (--output)\n" +
			"and lists what was dropped: a transfer whose last change was lost comes back in an earlier\n" +
			"version (its line is named), or not at all. The damaged file is left as it is: stop the\n" +
			"agents, keep it aside, and move the new file into its place.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runFsck(cmd.Context(), o, g) },
	}
	o.AddFlags(cmd)
	return cmd
}

func runFsck(_ context.Context, o *FsckOptions, g *Globals) error {
	u := g.stateURL()
	if !strings.HasPrefix(u, "file:") {
		return usagef("fsck checks a file store (--state file:PATH); %s is not one", RedactURL(u))
	}
	path, err := memfilePath(u)
	if err != nil {
		return err
	}
	if o.Output != "" && !o.Repair {
		return usagef("--output is the file --repair writes: give --repair too")
	}
	out := ""
	if o.Repair {
		out = cmp.Or(o.Output, path+".repaired")
		if err := g.checkOutputs([]outputs.Output{{Flag: "--output", Path: out}}); err != nil {
			return err
		}
	}
	rep, err := memfile.Check(path)
	if err != nil {
		return fileStoreError(err, path)
	}
	if !rep.Damaged() {
		out = ""
	} else if out != "" {
		if rep, err = memfile.Salvage(path, out); err != nil {
			return err
		}
	}
	if o.JSON {
		if err := writeJSON(g.Stdout, fsckJSON{Report: rep, Repaired: out}); err != nil {
			return err
		}
	} else {
		printFsck(g, rep, out)
	}
	switch {
	case rep.Damaged() && out == "":
		return fmt.Errorf("%s is damaged (%d problems): aso fsck --repair writes what can be read into a new file", path, len(rep.Problems))
	case out != "":
		g.Log.WithField("output", out).Warn("salvaged the state file: stop the agents, keep the damaged file aside and move the new one into its place")
	}
	return nil
}

// fsckJSON is what `aso fsck --json` prints.
type fsckJSON struct {
	*memfile.Report
	Repaired string `json:"repaired,omitempty"` // the new file --repair wrote
}

func printFsck(g *Globals, rep *memfile.Report, out string) {
	w := g.Stdout
	fmt.Fprintf(w, "%s: %d documents readable (%d of them not valid transfers), %d problems\n", rep.Path, rep.Documents, rep.Invalid, len(rep.Problems))
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "line %d (offset %d): %s\n", p.Line, p.Offset, p.What)
		for _, id := range p.Dropped {
			fmt.Fprintf(w, "  dropped a version of %s\n", id)
		}
	}
	if t := rep.TornTail; t != nil {
		fmt.Fprintf(w, "line %d (offset %d): %s\n", t.Line, t.Offset, t.What)
	}
	for _, l := range rep.Losses {
		if l.Line == 0 {
			fmt.Fprintf(w, "lost: %s (no readable version)\n", l.ID)
		} else {
			fmt.Fprintf(w, "reverted: %s to its version of line %d\n", l.ID, l.Line)
		}
	}
	if out != "" {
		fmt.Fprintf(w, "wrote %d documents to %s\n", rep.Documents, out)
	}
}
