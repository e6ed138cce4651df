// Package busytest tells tests how busy the machine running them is, so
// that a test that must let a TTL pass (a paused agent's lock) or bounds
// real work by a budget scales them to the machine instead of assuming an
// idle one. It is measured once per test binary.
package busytest

import (
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Env overrides the measured factor (a number, at least 1).
const Env = "ASO_TEST_SLOWNESS"

// maxFactor bounds the factor: a machine slower than that makes the tests
// long rather than longer.
const maxFactor = 10

// Factor is how many times slower than an idle machine this one runs
// (at least 1): the larger of the load average per core and the ratio of
// wall-clock time to the CPU time a busy loop got on its thread (the share
// of a core a test's goroutine gets now), at most 10. ASO_TEST_SLOWNESS
// overrides it.
func Factor() float64 { return factor() }

var factor = sync.OnceValue(func() float64 {
	if v, err := strconv.ParseFloat(os.Getenv(Env), 64); err == nil && v >= 1 {
		return v
	}
	return math.Min(maxFactor, math.Max(1, math.Max(loadPerCore(), contention())))
})

// Scale returns d times Factor.
func Scale(d time.Duration) time.Duration { return time.Duration(float64(d) * Factor()) }

// loadPerCore is the 1-minute load average per core (0 if unknown).
func loadPerCore() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	load, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return load / float64(runtime.NumCPU())
}

// contention runs a busy loop for about 100 ms and returns its wall-clock
// time over the CPU time its thread got (0 if the thread's CPU time cannot
// be read).
func contention() float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, ok := threadCPU()
	if !ok {
		return 0
	}
	start := time.Now()
	x := uint64(1)
	for time.Since(start) < 100*time.Millisecond {
		for range 10000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	wall := time.Since(start)
	c1, _ := threadCPU()
	if cpu := c1 - c0; cpu > 0 && x != 0 {
		return float64(wall) / float64(cpu)
	}
	return 0
}
