package holder

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
)

// procStat reads the start time (clock ticks since boot, field 22) and
// the state (field 3) of process pid from /proc/PID/stat; an error wrapping
// fs.ErrNotExist when there is no such process.
func procStat(pid int) (uint64, byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// the command name (field 2) is in parentheses and may hold anything:
	// the fields that follow start after the last ')'
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return start, f[0][0], nil
}

// machineTag names this boot of this host and this process's PID
// namespace (8 hex digits), in which pids and start times mean something:
// a hash of the kernel's boot ID and the namespace's inode. "" if they
// cannot be read.
func machineTag() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	h := fnv.New32a()
	h.Write(bytes.TrimSpace(boot))
	h.Write([]byte{0})
	h.Write([]byte(ns))
	return fmt.Sprintf("%08x", h.Sum32())
}
