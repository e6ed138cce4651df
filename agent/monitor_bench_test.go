package agent_test

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/asyncstageout/aso/agent"
	"github.com/asyncstageout/aso/fts/ftstest"
	"github.com/asyncstageout/aso/state"
)

// BenchmarkMonitor measures one pass of an agent over n transfers that
// stay queued in FTS (ASO_BENCH_ACTIVE, default 20,000: what one pass
// submits at the default batch size), on a memfile store: all of them at
// once (the store as it is), and in groups of 2,000 (10 jobs) and of the
// default size (20,000 at this batch size: 100 jobs) through a
// store that lists them a few jobs at a time (pagedStore, whose listing of
// jobs is taken before the measured passes, as a store with an index of
// jobs answers it without reading every transfer). Each pass
// writes the progress of every transfer. peak-MiB is the largest heap
// above the heap before the pass, sampled every millisecond with the
// collector kept busy (heapPeak): about the most the pass holds at once.
func BenchmarkMonitor(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("ASO_BENCH_ACTIVE")); err == nil && v > 0 {
		n = v
	}
	for _, bc := range []struct {
		name  string
		paged bool
		group int // 0: the default
	}{{"all", false, 0}, {"groups-of-2000", true, 2000}, {"groups-default", true, 0}} {
		b.Run(bc.name, func(b *testing.B) {
			w := newWorld(b, ftstest.Options{QueueDelay: 1000 * time.Hour})
			reqs := make([]state.Request, n)
			for i := range reqs {
				reqs[i], _ = w.request("queued", i, false)
			}
			w.enqueue(reqs)
			cfg := w.config("agent-1")
			cfg.BatchSize, cfg.MaxFilesPerJob, cfg.MonitorGroup = 2000, 200, bc.group
			cfg.Once = true
			var store agent.Store = w.open("agent-1")
			paged := &pagedStore{Store: store}
			if bc.paged {
				store = paged
			}
			active := 0
			for active < n { // one pass submits 100 jobs
				a := w.agent(cfg, store)
				a.OnPass = func(ps agent.PassStats) { active = ps.Active }
				must(b, a.Run(context.Background()))
			}
			// the jobs do not change from here on: their listing is taken
			// once, as a store with an index of jobs answers it
			if _, err := paged.ActiveJobs(context.Background(), testUser); err != nil {
				b.Fatal(err)
			}
			paged.frozen = true
			b.ReportAllocs()
			b.ResetTimer()
			var peak uint64
			for range b.N {
				w.clk.Advance(cfg.UpdateWindow) // progress is due again
				a := w.agent(cfg, store)
				var ps agent.PassStats
				a.OnPass = func(p agent.PassStats) { ps = p }
				peak = max(peak, heapPeak(func() { must(b, a.Run(context.Background())) }))
				if ps.Active != n || ps.Errors != 0 {
					b.Fatalf("pass: %d active, %d errors; want %d, 0", ps.Active, ps.Errors, n)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
		})
	}
}

// heapPeak runs f and returns the largest heap above the heap before it,
// sampled every millisecond. The collector runs at GOGC=5 meanwhile, so
// that the heap follows what is live instead of the collector's headroom.
func heapPeak(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(s); return s[0].Value.Uint64() }
	base := read()
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				peak = max(peak, read())
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	peak = max(peak, read())
	if peak < base {
		return 0
	}
	return peak - base
}
