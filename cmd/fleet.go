package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/asyncstageout/aso/fleet"
	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/srm"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
)

// FleetOptions are the flags of `aso run --all-users`, and those a fleet
// hands its agents (fleet.Handover).
type FleetOptions struct {
	AllUsers         bool
	MaxAgents        int
	DiscoverInterval time.Duration
	// Handover is what the fleet that started this agent handed it
	// (ReadQuorum and Identity hold its Couch: -1, not given).
	Handover   fleet.Handover
	ReadQuorum int
	Identity   string

	// flags are the flags of the run command, for the agents' arguments.
	flags func() *pflag.FlagSet
}

// Defaults of FleetOptions.
const (
	DefaultMaxAgents        = 4
	DefaultDiscoverInterval = 30 * time.Second
)

// AddFlags registers the flags of --all-users on cmd, and those of
// fleet.Handover, hidden: only a fleet sets them (run's --help says what
// they are).
func (o *FleetOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.AllUsers, "all-users", false, "run one agent process (aso run --user U) for every user with due work, oldest waiting first; {user} in --proxy, --token-file, --metrics-file, --storage-token-file and --report is replaced by the user")
	f.IntVar(&o.MaxAgents, "max-agents", DefaultMaxAgents, "with --all-users: agent processes at once")
	f.DurationVar(&o.DiscoverInterval, "discover-interval", DefaultDiscoverInterval, "with --all-users: look for users with due work this often while agents run (and at once whenever one ends)")
	h := &o.Handover
	f.BoolVar(&h.Agent, "fleet-agent", false, "set by a fleet on its agents: one user's agent (whatever --all-users says), no queue summary at the end")
	f.StringVar(&h.Owner, "fleet-owner", "", "set by a fleet on its agents: the owner ID under which it took the user's run lock for the agent")
	f.IntVar(&o.ReadQuorum, "fleet-read-quorum", -1, "set by a fleet on its agents on CouchDB: the database's read quorum, as the fleet found it when it checked the database and the credentials")
	f.StringVar(&o.Identity, "fleet-couch-identity", "", "set by a fleet on its agents on CouchDB: who the credentials are, as the fleet found it (JSON)")
	f.IntVar(&h.ProgressFD, "progress-fd", 0, "set by a fleet on its agents: write each pass as a JSON line to this descriptor")
	for _, name := range []string{"fleet-agent", "fleet-owner", "fleet-read-quorum", "fleet-couch-identity", "progress-fd"} {
		_ = f.MarkHidden(name)
	}
	o.flags = cmd.Flags
}

// fleet reports whether the run is a fleet's: --all-users, which only the
// command line gives (never the environment or the file its agents share).
func (o *FleetOptions) fleet() bool { return o.AllUsers }

// perUser are the flags of run whose value may hold {user}.
func perUser(o *RunOptions) []fleet.Flag {
	return []fleet.Flag{{Name: "proxy", Value: o.FTS.Proxy}, {Name: "token-file", Value: o.FTS.TokenFile}, {Name: "metrics-file", Value: o.MetricsFile},
		{Name: "storage-token-file", Value: o.Beyond.TokenFile}, {Name: "report", Value: o.Beyond.Report}}
}

// runFleet is `aso run --all-users`: it checks the flags and the sites
// file, opens the store and runs the fleet (package fleet) on it.
func runFleet(ctx context.Context, o *RunOptions, g *Globals) error {
	fo := o.Fleet
	switch {
	case g.userFlagGiven():
		return usagef("--all-users runs every user with due work: do not give --user with it")
	case o.Sites == "":
		return usagef("no sites file: give --sites FILE (or ASO_SITES)")
	case o.Beyond.Report != "" && !strings.Contains(o.Beyond.Report, fleet.UserTemplate):
		return usagef("--report %s: each agent of --all-users writes its own report: put %s in the path", o.Beyond.Report, fleet.UserTemplate)
	case o.MetricsFile != "" && !strings.Contains(o.MetricsFile, fleet.UserTemplate):
		return usagef("--metrics-file %s: each agent of --all-users writes its own metrics file: put %s in the path", o.MetricsFile, fleet.UserTemplate)
	}
	// a broken sites file stops the fleet before any agent starts
	if _, err := srm.LoadSites(o.Sites); err != nil {
		return permanentError{fmt.Errorf("sites file: %w", err)}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the aso executable to run the agents: %w", err)
	}
	store, err := g.OpenStore(ctx, state.Config{Agent: state.Agent{Owner: holder.NewID()}})
	if err != nil {
		return err
	}
	defer store.Close()
	a := o.Agent
	cfg := fleet.Config{Exe: exe, Args: fo.agentBase(), PerUser: perUser(o),
		MaxAgents: fo.MaxAgents, DiscoverInterval: fo.DiscoverInterval, LockTTL: a.LockTTL, PhaseTimeout: a.PhaseTimeout,
		MaxRuntime: a.MaxRuntime, Once: a.Once, DryRun: a.DryRun, Log: g.Log}
	if cs, ok := store.(interface{ Checked() couch.Checked }); ok {
		c := cs.Checked()
		id, err := json.Marshal(g.couchCred.Identity)
		if err != nil {
			return err
		}
		cfg.Couch = &fleet.Couch{ReadQuorum: c.ReadQuorum, Identity: string(id)}
	}
	con := g.openConsole(g.Progress, 0)
	defer con.close()
	if view := newFleetView(con); view.on() {
		cfg.View = view
	}
	f := fleet.New(cfg, store)
	defer onStopSignals(ctx, nil, func() {
		f.Kill()
		fmt.Fprintln(g.Stderr, "aso: second signal: agents killed with their process groups, exiting at once")
		os.Exit(ExitError)
	})()
	return f.Run(ctx)
}

// fleetOnly are the flags of the fleet itself, which its agents are not
// given.
var fleetOnly = map[string]bool{"all-users": true, "max-agents": true, "discover-interval": true}

// agentBase returns the arguments every agent of the fleet is given: the
// flags given on the fleet's command line but the fleet's own, so that an
// agent's arguments (in ps, say) do not show --all-users.
func (o *FleetOptions) agentBase() []string {
	args := []string{"run"}
	o.flags().Visit(func(fl *pflag.Flag) {
		if fleetOnly[fl.Name] || fl.Hidden {
			return
		}
		v := fl.Value.String()
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		args = append(args, "--"+fl.Name+"="+v)
	})
	return args
}

// runOwner is the owner ID of the agent of a run: the one the fleet took
// the user's run lock under (--fleet-owner, an agent of a fleet only), or
// a new one of this process.
func runOwner(fo *FleetOptions) (string, error) {
	h := fo.Handover
	if h.Owner == "" {
		return holder.NewID(), nil
	}
	if !h.Agent {
		return "", usagef("--fleet-owner is set by --all-users on its agents only (with --fleet-agent)")
	}
	if _, ok := holder.Parse(h.Owner); !ok {
		return "", usagef("--fleet-owner %q: not an agent owner ID (host:pid:start-machine-random)", h.Owner)
	}
	return h.Owner, nil
}

// fleetChecked is what the fleet that started this agent found when it
// opened CouchDB (--fleet-read-quorum and --fleet-couch-identity, an agent
// of a fleet only), nil if it was not given: the agent then opens the
// database without asking again and does not check its credentials'
// role, which the fleet did with the same credentials.
func fleetChecked(fo *FleetOptions) (*couch.Checked, error) {
	switch {
	case fo.ReadQuorum < 0:
		return nil, nil
	case !fo.Handover.Agent:
		return nil, usagef("--fleet-read-quorum is set by --all-users on its agents only (with --fleet-agent)")
	}
	c := &couch.Checked{ReadQuorum: fo.ReadQuorum}
	if fo.Identity != "" {
		if err := json.Unmarshal([]byte(fo.Identity), &c.Identity); err != nil {
			return nil, usagef("--fleet-couch-identity %q: %v", fo.Identity, err)
		}
	}
	return c, nil
}
