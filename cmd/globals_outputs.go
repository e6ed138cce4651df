package cmd

import (
	"strings"

	"github.com/asyncstageout/aso/internal/outputs"
	"github.com/asyncstageout/aso/state/memfile"
)

// checkOutputs refuses, before any work, an output of the command that
// names one of aso's inputs or cannot be written (outputs.Check), as a
// usage error. The inputs are the file store's files, the configuration
// file, the sites file of the environment or the configuration, and the
// command's own extra ones.
func (g *Globals) checkOutputs(outs []outputs.Output, extra ...outputs.Input) error {
	inputs := append(g.inputs(), extra...)
	for _, o := range outs {
		if err := outputs.Check(o, inputs...); err != nil {
			return usageError{err}
		}
	}
	return nil
}

// inputs lists the files every command reads or may read.
func (g *Globals) inputs() []outputs.Input {
	var in []outputs.Input
	if c := g.conf; c != nil {
		in = append(in, outputs.Input{What: "the configuration file", Path: c.src.Path},
			outputs.Input{What: "the sites file", Path: c.v.GetString("sites")})
	}
	u := g.stateURL()
	if p, err := memfilePath(u); err == nil && strings.HasPrefix(u, "file:") {
		for i, f := range memfile.Files(p) {
			what := "the state file"
			if i > 0 {
				what = "a file of the state store"
			}
			in = append(in, outputs.Input{What: what, Path: f})
		}
	}
	return in
}
