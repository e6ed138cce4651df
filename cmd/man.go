package cmd

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// ManOptions are the arguments of `aso man`.
type ManOptions struct {
	Dir  string
	Root *cobra.Command
}

func newManCommand(g *Globals) *cobra.Command {
	o := &ManOptions{}
	return &cobra.Command{
		Use:   "man DIR",
		Short: "Write a man page per command into DIR, generated from the help",
		Long: "man writes aso.1 and aso-COMMAND.1 for every command into DIR (created if missing),\n" +
			"from the same text as --help. Read one with `man -l DIR/aso-run.1`, or install\n" +
			"them into a man directory such as /usr/local/share/man/man1.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir, o.Root = args[0], cmd.Root()
			return runMan(cmd.Context(), o, g)
		},
	}
}

func runMan(_ context.Context, o *ManOptions, g *Globals) error {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return fmt.Errorf("man: %w", err)
	}
	o.Root.DisableAutoGenTag = true
	header := &doc.GenManHeader{Title: "ASO", Section: "1", Source: "aso " + Version, Manual: "aso manual"}
	if err := doc.GenManTree(o.Root, header, o.Dir); err != nil {
		return fmt.Errorf("man: %w", err)
	}
	_, err := fmt.Fprintf(g.Stdout, "man pages written to %s\n", o.Dir)
	return err
}
