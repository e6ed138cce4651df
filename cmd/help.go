package cmd

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/asyncstageout/aso/internal/ranges"
)

// exitMeaning is what each exit code of aso means, the one text every
// command's help and man page quotes.
var exitMeaning = map[int]string{
	ExitOK:       "success",
	ExitError:    "error: the message says what went wrong",
	ExitUsage:    "usage error: a bad flag, argument, environment variable or configuration value",
	ExitLocked:   "another agent holds this user's run lock: nothing was touched",
	ExitTempFail: "temporary (EX_TEMPFAIL): the state store or FTS did not answer, or the run lock or a lease was lost; run again later",
	ExitConfig:   "needs a person (EX_CONFIG): the configuration, the sites file or the credentials are wrong (CouchDB's too: refused, or without the role the command needs), or the file store is missing (aso init), damaged (aso fsck) or not a state file",
	exitSIGHUP:   "stopped by SIGHUP (128 + its number)",
	exitSIGINT:   "stopped by SIGINT, Ctrl-C (128 + its number)",
	exitSIGTERM:  "stopped by SIGTERM (128 + its number)",
}

// The exit codes of a command a stop signal stopped short.
const (
	exitSIGHUP  = 129
	exitSIGINT  = 130
	exitSIGTERM = 143
)

// exitUse is an exit code a command can return, with what it means for
// that command beyond exitMeaning ("" for nothing more).
type exitUse struct {
	code int
	note string
}

// storeExits are the codes of a command that reads or writes the store.
var storeExits = []exitUse{{ExitOK, ""}, {ExitError, ""}, {ExitUsage, ""}, {ExitTempFail, ""}, {ExitConfig, ""}}

// commandExits lists the exit codes each command can return. A command
// not named here returns 0, 1 or 2.
var commandExits = map[string][]exitUse{
	"run": {
		{ExitOK, "the queue drained, --max-runtime passed, or a stop signal (SIGTERM, SIGINT, SIGHUP) stopped the run cleanly"},
		{ExitError, "also a second stop signal, which exits at once"},
		{ExitUsage, ""}, {ExitLocked, "with --all-users: every user with due work is held by agents elsewhere"},
		{ExitTempFail, "also every pass for --give-up-after failed without progress"},
		{ExitConfig, "also a storage token that cannot be had"},
		{-1, "with --all-users: the most severe code of its agents (78 and 64, then 1, then 75, then 3, then 0)"},
	},
	"enqueue": {
		{ExitOK, ""}, {ExitError, ""},
		{ExitUsage, "also when some records were rejected (each is reported; every other record was stored)"},
		{ExitTempFail, ""}, {ExitConfig, ""},
		{exitSIGHUP, ""}, {exitSIGINT, ""}, {exitSIGTERM, "the records read before the signal are stored and counted"},
	},
	"kill":  withNote(storeExits, ExitError, "also an ID that was not found, or a question answered no"),
	"retry": withNote(storeExits, ExitError, "also an ID that was not found, or a question answered no"),
	"purge": withNote(storeExits, ExitError, "also a question answered no"),
	"verify": {{ExitOK, "every file checked is present"}, {ExitError, "also a file missing or different at its destination, whatever else could not be read"},
		{ExitUsage, ""}, {ExitTempFail, "also no file missing or different, but one the storage could not be asked about"}, {ExitConfig, ""}},
	"status":            withNote(storeExits, ExitError, "also an ID that is not found"),
	"list":              storeExits,
	"init":              storeExits,
	"unlock":            withNote(storeExits, ExitError, "also a lock that another holder took meanwhile"),
	"fsck":              withNote(storeExits, ExitError, "also a damaged file"),
	"resolve-conflicts": withNote(storeExits, ExitError, "also documents left conflicted (each is named)"),
	"resolve": {{ExitOK, ""}, {ExitError, "also no rule of the site matches the LFN"},
		{ExitUsage, "also a site the sites file does not name"}},
	"rm":      {{ExitOK, ""}, {ExitError, "also a PFN that was not deleted"}, {ExitUsage, ""}, {ExitConfig, ""}},
	"version": {{ExitOK, ""}},
	"serve": withNote(withNote(storeExits, ExitOK, "a stop signal (SIGTERM, SIGINT, SIGHUP) stopped it cleanly"),
		ExitConfig, "also an address it cannot listen on, or a --tls-cert, --htpasswd, --client-ca or --grid-mapfile it cannot read"),
}

// withNote returns uses with note on code.
func withNote(uses []exitUse, code int, note string) []exitUse {
	out := append([]exitUse(nil), uses...)
	for i := range out {
		if out[i].code == code {
			out[i].note = note
		}
	}
	return out
}

// exitsOf returns the exit codes of c: the root's are every code.
func exitsOf(c *cobra.Command) []exitUse {
	if !c.HasParent() {
		codes := make([]int, 0, len(exitMeaning))
		for code := range exitMeaning {
			codes = append(codes, code)
		}
		sort.Ints(codes)
		uses := make([]exitUse, len(codes))
		for i, code := range codes {
			uses[i] = exitUse{code: code}
		}
		return uses
	}
	if uses, ok := commandExits[c.Name()]; ok {
		return uses
	}
	return []exitUse{{ExitOK, ""}, {ExitError, ""}, {ExitUsage, ""}}
}

// exitCodesText lists the exit codes of c, a line each, every line
// starting with indent.
func exitCodesText(c *cobra.Command, indent string) string {
	var b strings.Builder
	for _, u := range exitsOf(c) {
		text := exitMeaning[u.code]
		switch {
		case u.code < 0:
			fmt.Fprintf(&b, "%s     %s\n", indent, u.note)
			continue
		case u.note != "":
			text += "; " + u.note
		}
		fmt.Fprintf(&b, "%s%-4d %s\n", indent, u.code, text)
	}
	return b.String()
}

// helpExitCodes is the section of --help that lists the exit codes.
func helpExitCodes(c *cobra.Command) string {
	return "\nExit codes:\n" + exitCodesText(c, "  ")
}

// envOf returns the environment variable that sets fl ("" for none).
func envOf(fl *pflag.Flag) string {
	if fl.Name == "help" || fl.Name == "version" || fl.Hidden {
		return ""
	}
	return envName(fl.Name)
}

// annotateFlags appends to the help text of every flag of the command tree
// under root the range of a count or a duration (package ranges) and the
// environment variable that sets it, as rclone does: "... (range 1s to
// 24h) [$ASO_LOCK_TTL]".
func annotateFlags(root *cobra.Command) {
	seen := map[*pflag.Flag]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		add := func(fl *pflag.Flag) {
			if seen[fl] {
				return
			}
			seen[fl] = true
			if r, ok := ranges.Of(c.Name(), fl.Name); ok {
				fl.Usage += " (range " + r.String() + ")"
			}
			if env := envOf(fl); env != "" {
				fl.Usage += " [$" + env + "]"
			}
		}
		c.LocalFlags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// setupHelp adds to every command's help its exit codes, and its
// examples (examples); and to every flag its range and environment
// variable.
func setupHelp(root *cobra.Command) {
	annotateFlags(root)
	templateFuncs.Do(func() { cobra.AddTemplateFunc("exitCodes", helpExitCodes) }) // cobra's, global
	root.SetUsageTemplate(root.UsageTemplate() + "{{exitCodes .}}")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Example == "" {
			c.Example = examples[c.Name()]
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// templateFuncs adds aso's functions to cobra's templates, once.
var templateFuncs sync.Once

// examples are the examples of each command, in --help and the man pages.
var examples = map[string]string{
	"aso": `  aso init --state file:/data/aso/state.aso
  aso enqueue -f requests.jsonl
  aso run --sites sites.yaml
  aso status`,
	"init": `  aso init --state file:/data/aso/state.aso
  ASO_COUCHDB_CREDENTIALS=/etc/aso/couch.cred aso init --state couchdb://couch.example.org:5984/aso
  aso init --users --config /etc/aso/aso.yaml   # with couchdb-credentials-admin, -agent, ... configured`,
	"enqueue": `  aso enqueue -f requests.jsonl
  producer | aso enqueue --user alice
  aso enqueue -f requests.json --json > outcomes.jsonl`,
	"run": `  aso run --user alice --sites /etc/aso/sites.yaml --max-runtime 50m
  aso run --sites sites.yaml --dry-run
  aso run --all-users --sites /etc/aso/sites.yaml --metrics-file /var/lib/node_exporter/aso_{user}.prom`,
	"status": `  aso status --user alice
  aso status --all-users --json
  aso status 3f2a9c1e`,
	"list": `  aso list --in-state failed --error-class no_space
  aso list --all-users --link T2_US_Nebraska->T1_DE_KIT --since 2h --json`,
	"kill": `  aso kill 3f2a9c1e 77b0d4aa
  aso kill --all --user alice --dry-run
  aso kill --in-state submitted --fts-job 1c9f0d2e-4a55-11ef-9d5b-fa163e5b6a8e`,
	"retry": `  aso retry --failed --user alice
  aso retry --error-class source_missing --since 24h --dry-run`,
	"verify": `  aso verify --user alice
  aso verify --all-users --sample 5% --parallel 16 --json > verified.jsonl
  aso retry --verified missing --user alice`,
	"purge": `  aso purge --older-than 720h --archive /data/aso/purged.jsonl
  aso purge --all-users --older-than 2160h --dry-run`,
	"unlock":            `  aso unlock --user alice`,
	"fsck":              `  aso fsck --state file:/data/aso/state.aso --repair --output /data/aso/repaired.aso`,
	"resolve-conflicts": `  aso resolve-conflicts --all-users --config /etc/aso/aso.yaml`,
	"resolve":           `  aso resolve --sites /etc/aso/sites.yaml T2_US_Nebraska /store/user/alice/f.root`,
	"rm":                `  aso rm --proxy /tmp/x509up_u1234 davs://eos.example.org:443/eos/store/user/alice/f.root`,
	"config":            `  aso --config /etc/aso/aso.yaml config`,
	"man": `  aso man                 # into ~/.local/share/man/man1 (/usr/local/share/man/man1 as root)
  aso man man && man -l man/aso-run.1`,
	"fts-sim":    `  aso fts-sim --listen 127.0.0.1:8446 --oauth2 --transfer-time 5s`,
	"completion": `  source <(aso completion bash)`,
	"version":    `  aso version`,
	"serve": `  aso serve --state couchdb://couch.example.org:5984/aso
  aso serve --listen 0.0.0.0:8443 --tls-cert serve.crt --tls-key serve.key --htpasswd serve.htpasswd --operators prometheus`,
}
