// Package holder is the one holder of aso: the agent process that an owner
// ID names (Holder: host, pid, start time, boot and PID namespace), how
// the ID is written and read, what this host can know of that process
// (Of: it runs here, is stopped, is gone, or cannot be checked from here)
// and the takeover rule that follows (Check.TakeOver). The run lock, aso
// run, the fleet, aso unlock, aso status and aso serve all judge with it.
package holder

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Holder is what an agent's owner ID says of the process that runs it:
// host:pid:start-machine-random, where start is the process's start time
// (clock ticks since boot, Linux's /proc/PID/stat field 22) and machine
// names the boot and the PID namespace the pid belongs to (8 hex digits).
// A pid alone does not name a process: once the holder has died, another
// process may get it. Older agents wrote host:pid:random; they parse with
// Start and Machine empty.
type Holder struct {
	Host    string
	PID     int
	Start   uint64 // 0: unknown
	Machine string // "": unknown
}

// ID returns the owner ID of the process h, with random to tell apart two
// agents of one process (tests run several).
func (h Holder) ID(random string) string {
	if h.Start == 0 || h.Machine == "" {
		return fmt.Sprintf("%s:%d:%s", h.Host, h.PID, random)
	}
	return fmt.Sprintf("%s:%d:%d-%s-%s", h.Host, h.PID, h.Start, h.Machine, random)
}

// Parse reads an owner ID written by ID (or an older agent's
// host:pid:random); ok is false if id has neither form.
func Parse(id string) (h Holder, ok bool) {
	parts := strings.Split(id, ":")
	if len(parts) < 3 {
		return Holder{}, false
	}
	pid, err := strconv.Atoi(parts[len(parts)-2])
	if err != nil || pid <= 0 {
		return Holder{}, false
	}
	h = Holder{Host: strings.Join(parts[:len(parts)-2], ":"), PID: pid}
	if f := strings.Split(parts[len(parts)-1], "-"); len(f) == 3 {
		if start, err := strconv.ParseUint(f[0], 10, 64); err == nil && start > 0 && f[1] != "" {
			h.Start, h.Machine = start, f[1]
		}
	}
	return h, true
}

// NewID returns an owner ID of this process, host:pid:start-machine-random
// (see Holder), readable by an operator; random tells apart the agents of
// one process.
func NewID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return This().ID(hex.EncodeToString(b[:]))
}

// This is what this process's owner IDs say of it.
func This() Holder { return this() }

var this = sync.OnceValue(func() Holder {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	h := Holder{Host: host, PID: os.Getpid(), Machine: machineTag()}
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
	h, ok := Parse(id)
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

// TakeOver is the takeover rule: the lock of a holder known gone is taken
// over (or released by aso unlock) at once. A holder that runs, is stopped
// or cannot be checked from here keeps its lock until the lock expires.
func (c Check) TakeOver() bool { return c.State == Gone }

// Judge judges the holder of owner ID id for an agent that wants its
// lock: why, and whether the lock is to be taken over at once (TakeOver).
func Judge(id string) (why string, takeOver bool) {
	c := Of(id)
	return c.Why, c.TakeOver()
}

// Refusal explains to a user why a run is refused the run lock of user,
// held by id until expire (RFC 3339), at now: who holds it, whether it
// runs, and, when it looks dead, how to release it. A lock renewed every
// third of ttl whose expiry is nearer than that missed a renewal at least.
func Refusal(id, expire, user string, now time.Time, ttl time.Duration) string {
	c := Of(id)
	msg := fmt.Sprintf("the run lock of %s is held by %s until %s: %s", user, id, expire, c.Why)
	exp, perr := time.Parse(time.RFC3339Nano, expire)
	stale := perr == nil && exp.Sub(now) < ttl/3
	switch {
	case c.State == Running && !stale:
		return msg + "; that agent is working on this queue"
	case c.State == Stopped:
		return msg + "; that agent is stopped, not dead (SIGSTOP, or a debugger): kill -CONT resumes it; its lock is not taken over while it is valid, and a run after it expires takes it"
	case c.State == Running:
		return msg + fmt.Sprintf("; it looks dead (not renewed for a while); if it is, `aso unlock %s --force` releases the lock (else it expires by itself)", user)
	}
	return msg + fmt.Sprintf("; if that agent is dead, `aso unlock %s --force` releases the lock now (else it expires by itself)", user)
}
