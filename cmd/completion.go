package cmd

import (
	"context"

	"github.com/spf13/cobra"
)

// CompletionOptions are the arguments of `aso completion`.
type CompletionOptions struct {
	Shell string
	Root  *cobra.Command
}

func newCompletionCommand(g *Globals) *cobra.Command {
	o := &CompletionOptions{}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script for aso",
		Long: "completion prints a script that makes the shell complete aso's commands and flags.\n\n" +
			"  bash:       source <(aso completion bash)   (needs the bash-completion package: apt-get or dnf install bash-completion)\n" +
			"  zsh:        aso completion zsh > \"${fpath[1]}/_aso\"\n" +
			"  fish:       aso completion fish > ~/.config/fish/completions/aso.fish\n" +
			"  powershell: aso completion powershell | Out-String | Invoke-Expression",
		ValidArgs:             []string{"bash", "zsh", "fish", "powershell"},
		Args:                  cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Shell, o.Root = args[0], cmd.Root()
			return runCompletion(cmd.Context(), o, g)
		},
	}
}

func runCompletion(_ context.Context, o *CompletionOptions, g *Globals) error {
	switch o.Shell {
	case "bash":
		return o.Root.GenBashCompletionV2(g.Stdout, true)
	case "zsh":
		return o.Root.GenZshCompletion(g.Stdout)
	case "fish":
		return o.Root.GenFishCompletion(g.Stdout, true)
	case "powershell":
		return o.Root.GenPowerShellCompletionWithDesc(g.Stdout)
	}
	return usagef("completion: unknown shell %q: want bash, zsh, fish or powershell", o.Shell)
}
