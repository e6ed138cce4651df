package fleet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/asyncstageout/aso/agent"
)

// Handover is what a fleet hands each agent it starts, on the agent's
// command line after `run --user U --log-format json --progress never`:
//
//	--fleet-agent               the run is one user's agent of a fleet, whatever
//	                            all-users the environment or configuration file
//	                            says; it skips the summary of its queue at the end
//	--fleet-owner ID            the owner ID under which the fleet took the user's
//	                            run lock; the agent runs under it
//	--fleet-read-quorum N       on CouchDB: what the fleet's opening of the database
//	--fleet-couch-identity JSON found (its read quorum, who the credentials are);
//	                            the agent does not ask again
//	--progress-fd N             the agent writes each pass, a JSON line of
//	                            agent.PassStats, to descriptor N (see ProgressTo)
//
// Only a fleet sets them: `aso run` reads them but neither the environment
// nor the configuration file sets them.
type Handover struct {
	Agent      bool
	Owner      string // "": none (a dry run, or a lock left to the agent)
	Couch      *Couch // nil: not on CouchDB
	ProgressFD int    // 0: none
}

// Couch is what a fleet's opening of CouchDB found (couch.Checked), handed
// to its agents: they open the database without asking for its
// information again and do not check their credentials' role, which the
// fleet did with the same credentials.
type Couch struct {
	ReadQuorum int
	Identity   string // who the credentials are, as JSON
}

// Args are h's flags on an agent's command line.
func (h Handover) Args() []string {
	var args []string
	if h.Agent {
		args = append(args, "--fleet-agent")
	}
	if h.Owner != "" {
		args = append(args, "--fleet-owner", h.Owner)
	}
	if h.Couch != nil {
		args = append(args, "--fleet-read-quorum", fmt.Sprint(h.Couch.ReadQuorum), "--fleet-couch-identity", h.Couch.Identity)
	}
	if h.ProgressFD > 0 {
		args = append(args, "--progress-fd", fmt.Sprint(h.ProgressFD))
	}
	return args
}

// progressFD is the descriptor on which an agent of the fleet finds the
// pipe to its fleet (the first of exec.Cmd.ExtraFiles).
const progressFD = 3

// ProgressTo returns what writes an agent's passes to the fleet that runs
// it, on descriptor fd (--progress-fd; 0: nowhere): one JSON line of
// agent.PassStats per pass, so that the fleet learns each agent's
// progress for one line a pass, whatever the number of transfers and the
// log level. A fleet that went away is no error of the agent.
func ProgressTo(fd int) func(agent.PassStats) {
	if fd <= 0 {
		return func(agent.PassStats) {}
	}
	syscall.CloseOnExec(fd) // gfal-rm must not hold the pipe open
	f := os.NewFile(uintptr(fd), "fleet progress")
	if f == nil {
		return func(agent.PassStats) {}
	}
	enc := json.NewEncoder(f)
	return func(ps agent.PassStats) { _ = enc.Encode(ps) }
}

// readPasses reads an agent's passes from r until the agent closes it.
func readPasses(r io.ReadCloser, pass func(agent.PassStats)) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var ps agent.PassStats
		if json.Unmarshal(sc.Bytes(), &ps) == nil {
			pass(ps)
		}
	}
}
