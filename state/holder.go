package state

import (
	"fmt"
	"strconv"
	"strings"
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

// HolderID returns the owner ID of the process h, with random to tell
// apart two agents of one process (tests run several).
func HolderID(h Holder, random string) string {
	if h.Start == 0 || h.Machine == "" {
		return fmt.Sprintf("%s:%d:%s", h.Host, h.PID, random)
	}
	return fmt.Sprintf("%s:%d:%d-%s-%s", h.Host, h.PID, h.Start, h.Machine, random)
}

// ParseHolder reads an owner ID written by HolderID (or an older agent's
// host:pid:random); ok is false if id has neither form.
func ParseHolder(id string) (h Holder, ok bool) {
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

// HolderHostPID splits an agent owner ID (see ParseHolder) into its host
// and process ID; ok is false if it does not have that form.
func HolderHostPID(holder string) (host string, pid int, ok bool) {
	h, ok := ParseHolder(holder)
	return h.Host, h.PID, ok
}
