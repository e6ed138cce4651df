//go:build !linux

package busytest

import "time"

// threadCPU is not known here: the load average alone measures the machine.
func threadCPU() (time.Duration, bool) { return 0, false }
