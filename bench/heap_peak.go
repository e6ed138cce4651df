package main

import (
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// heapPeak writes a heap profile to path each time the live heap grows
// past a tenth over the largest it has written, checked every 50 ms, so
// that the file left at the end is the heap near its peak: a profile
// taken at the end of a drain shows what is left, not what the run held
// at its most. stop ends the sampling.
func heapPeak(path string) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var written uint64
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > written+written/10 {
				if f, err := os.Create(path); err == nil {
					_ = pprof.Lookup("heap").WriteTo(f, 0)
					f.Close()
					written = v
				}
			}
		}
	}()
	return func() { close(done); <-ended }
}
