// Package holder tells what this host can know of the agent process that
// a run lock's holder ID names (state.Holder): whether it runs here, is
// stopped, is gone, or cannot be checked from here. aso run and the fleet
// judge with it whether a lock may be taken over, aso unlock whether it
// may be released, aso status and aso serve what to show.
package holder

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"github.com/asyncstageout/aso/state"
)

// NewID returns an owner ID of this process, host:pid:start-machine-random
// (see state.Holder), readable by an operator; random tells apart the
// agents of one process.
func NewID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return state.HolderID(This(), hex.EncodeToString(b[:]))
}

// This is what this process's owner IDs say of it.
func This() state.Holder { return this() }

var this = sync.OnceValue(func() state.Holder {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	h := state.Holder{Host: host, PID: os.Getpid(), Machine: machineTag()}
	if start, _, err := procStat(h.PID); err == nil {
		h.Start = start
	}
	return h
})

// State is what this host can tell of a holder's process.
type State int

// The states of a holder's process.
const (
	Unknown State = iota // on another host, or not checkable from here
	Running              // runs on this host
	Stopped              // on this host, stopped (SIGSTOP): it renews nothing until it resumes
	Gone                 // was on this host, and its process is gone: the holder is dead
)

// String names s as aso status shows it.
func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Stopped:
		return "stopped"
	case Gone:
		return "dead"
	}
	return "unknown"
}

// Check is the judgement of a holder, and why.
type Check struct {
	State State
	Why   string
}

// Of judges the holder named by the owner ID id. Only a holder of this
// host, in this boot and PID namespace, can be found gone: its pid is
// free, belongs to a zombie, or belongs to another process (a start time
// other than the one in its ID). A holder of an older agent, whose ID has
// no start time, is judged by its pid alone.
func Of(id string) Check {
	h, ok := state.ParseHolder(id)
	if !ok {
		return Check{Unknown, "it is not an agent ID this host can check"}
	}
	self := This()
	switch {
	case h.Host != self.Host:
		return Check{Unknown, fmt.Sprintf("it runs on host %s, which cannot be checked from here", h.Host)}
	case h.Machine == "":
		return ofPID(h.PID)
	case h.Machine != self.Machine:
		return Check{Unknown, fmt.Sprintf("it runs in another boot or PID namespace of host %s, which cannot be checked from here", h.Host)}
	}
	start, st, err := procStat(h.PID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Check{Gone, fmt.Sprintf("process %d is gone from this host", h.PID)}
	case err != nil:
		return Check{Unknown, fmt.Sprintf("process %d cannot be read: %v", h.PID, err)}
	case start != h.Start:
		return Check{Gone, fmt.Sprintf("process %d is gone from this host (pid %d now belongs to a process started at another time)", h.PID, h.PID)}
	case st == 'Z' || st == 'X':
		return Check{Gone, fmt.Sprintf("process %d has exited", h.PID)}
	case st == 'T' || st == 't':
		return Check{Stopped, fmt.Sprintf("process %d is stopped on this host", h.PID)}
	}
	return Check{Running, fmt.Sprintf("process %d runs on this host", h.PID)}
}

// ofPID judges a holder of this host named by its pid alone.
func ofPID(pid int) Check {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return Check{Gone, fmt.Sprintf("process %d is gone from this host", pid)}
	}
	return Check{Running, fmt.Sprintf("process %d runs on this host", pid)}
}
