package cmd

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/spf13/cobra"

	"github.com/asyncstageout/aso/fleet"
	"github.com/asyncstageout/aso/internal/holder"
	"github.com/asyncstageout/aso/state/couch"
)

// handedOver parses what a fleet hands an agent (h.Args) with run's flags.
func handedOver(t *testing.T, h fleet.Handover) *FleetOptions {
	t.Helper()
	o := &RunOptions{}
	c := &cobra.Command{}
	o.AddFlags(c)
	if err := c.ParseFlags(h.Args()); err != nil {
		t.Fatalf("run's flags refuse the hand-over %q: %v", h.Args(), err)
	}
	return &o.Fleet
}

// TestHandover: what a fleet hands its agents on their command line is
// what run reads: the agent runs under the owner ID the fleet took the
// lock under, opens CouchDB with what the fleet found, and writes its
// passes to the descriptor given.
func TestHandover(t *testing.T) {
	id := holder.NewID()
	who := couch.Identity{Name: "agent-ann", Roles: []string{couch.RoleAgent}}
	js, err := json.Marshal(who)
	if err != nil {
		t.Fatal(err)
	}
	fo := handedOver(t, fleet.Handover{Agent: true, Owner: id, Couch: &fleet.Couch{ReadQuorum: 2, Identity: string(js)}, ProgressFD: 3})
	if !fo.Handover.Agent || fo.Handover.ProgressFD != 3 || fo.fleet() {
		t.Errorf("handed over: %+v; want one agent of a fleet, passes on descriptor 3", fo.Handover)
	}
	if got, err := runOwner(fo); err != nil || got != id {
		t.Errorf("runOwner = %q, %v; want the handed owner %s", got, err, id)
	}
	c, err := fleetChecked(fo)
	if err != nil || c == nil || c.ReadQuorum != 2 || c.Identity.Name != who.Name || !slices.Equal(c.Identity.Roles, who.Roles) {
		t.Errorf("fleetChecked = %+v, %v; want read quorum 2 and the identity %+v", c, err, who)
	}
	// not on CouchDB, no lock handed (a dry run): the agent opens and
	// checks as usual, under a new owner ID of its own
	fo = handedOver(t, fleet.Handover{Agent: true})
	if c, err := fleetChecked(fo); err != nil || c != nil {
		t.Errorf("fleetChecked(unset) = %+v, %v; want nil: open and check as usual", c, err)
	}
	if got, err := runOwner(fo); err != nil || got == "" || got == id {
		t.Errorf("runOwner() = %q, %v; want a new owner ID", got, err)
	}
}

// TestHandover_Refused: the hand-over's flags belong to an agent of a
// fleet (--fleet-agent), and must be what a fleet writes.
func TestHandover_Refused(t *testing.T) {
	id := holder.NewID()
	for name, fo := range map[string]FleetOptions{
		"owner, not an agent":       {Handover: fleet.Handover{Owner: id}, ReadQuorum: -1},
		"owner not an owner ID":     {Handover: fleet.Handover{Agent: true, Owner: "nonsense"}, ReadQuorum: -1},
		"read quorum, not an agent": {ReadQuorum: 0},
		"identity not JSON":         {Handover: fleet.Handover{Agent: true}, ReadQuorum: 2, Identity: "{"},
	} {
		t.Run(name, func(t *testing.T) {
			_, oerr := runOwner(&fo)
			_, cerr := fleetChecked(&fo)
			var ue usageError
			if !errors.As(errors.Join(oerr, cerr), &ue) {
				t.Errorf("runOwner: %v, fleetChecked: %v; want a usage error", oerr, cerr)
			}
		})
	}
}
