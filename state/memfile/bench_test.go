package memfile_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/memfile"
	"github.com/asyncstageout/aso/state/statetest"
)

// BenchmarkDrain enqueues n transfers and drives them all through claim,
// prepare, commit and done in jobs of 200, as the agent does. Run with
// -benchtime=1x; it reports the file's counters per drain.
func BenchmarkDrain(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				path := filepath.Join(b.TempDir(), "state.aso")
				s := open(b, path, memfile.Options{})
				for i := 0; i < n; i += 5000 {
					enqueue(b, s, i, min(5000, n-i))
				}
				st0 := s.Stats()
				b.StartTimer()
				drain(b, s, n)
				b.StopTimer()
				st := s.Stats()
				b.ReportMetric(float64(st.Fsyncs-st0.Fsyncs), "fsyncs")
				b.ReportMetric((st.SyncTime - st0.SyncTime).Seconds(), "sync-s")
				b.ReportMetric(float64(st.Compactions-st0.Compactions), "compactions")
				b.ReportMetric((st.CompactTime - st0.CompactTime).Seconds(), "compact-s")
				s.Close()
			}
		})
	}
}

func drain(b testing.TB, s *memfile.Store, n int) {
	done := 0
	for job := 0; ; job++ {
		ts, err := statetest.Claim(ctx, s, 200)
		if err != nil {
			b.Fatal(err)
		}
		if len(ts) == 0 {
			break
		}
		res, err := statetest.Prepare(ctx, s, ts, fmt.Sprint("sid-", job))
		must(b, res, err)
		commits := make([]state.Commit, len(ts))
		for i, tr := range ts {
			tr.Rev = res[i].Rev
			commits[i] = state.Commit{Transfer: tr, DestPFN: "file:///dst" + tr.DestinationLFN, FileID: int64(i)}
		}
		id := fmt.Sprint("job-", job)
		res, err = statetest.Commit(ctx, s, commits, id)
		must(b, res, err)
		jobs, err := statetest.Active(ctx, s, statetest.Alice)
		if err != nil || len(jobs) != 1 {
			b.Fatal(jobs, err)
		}
		outs := make([]state.Terminal, len(jobs[0].Transfers))
		for i, tr := range jobs[0].Transfers {
			outs[i] = state.Terminal{Transfer: tr, Outcome: state.OutcomeDone, FTSJob: id}
		}
		res, err = s.SetTerminalState(ctx, outs)
		must(b, res, err)
		done += len(outs)
	}
	if done != n {
		b.Fatalf("drained %d of %d", done, n)
	}
}

func must(b testing.TB, res []state.Result, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

// BenchmarkRead measures, on a compacted file of 100,000 done transfers,
// what the CLI commands do: open it (every command; heap-bytes/transfer
// is what the open store holds), open it and summarise it (aso status),
// open it and list one user's done transfers (aso list), and get 1,000
// transfers by ID from an open store. The same benchmark ran against
// the store before it held every transfer decoded (bench/README.md,
// "memfile as a memory store").
func BenchmarkRead(b *testing.B) {
	const n = 100_000
	path := filepath.Join(b.TempDir(), "state.aso")
	s := open(b, path, memfile.Options{})
	ids := make([]string, 0, n)
	for i := 0; i < n; i += 5000 {
		ids = append(ids, enqueue(b, s, i, 5000)...)
	}
	drain(b, s, n)
	if err := s.Compact(ctx); err != nil {
		b.Fatal(err)
	}
	s.Close()
	openFile := func(b *testing.B) *memfile.Store {
		s, err := memfile.Open(path, state.Config{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	b.Run("open", func(b *testing.B) {
		for range b.N {
			s := openFile(b)
			b.StopTimer()
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			b.ReportMetric(float64(m.HeapAlloc)/float64(n), "heap-bytes/transfer")
			s.Close()
			b.StartTimer()
		}
	})
	b.Run("status", func(b *testing.B) {
		for range b.N {
			s := openFile(b)
			if sum, err := s.Summary(ctx, state.SummaryOptions{}); err != nil || sum.Total != n {
				b.Fatal(sum.Total, err)
			}
			s.Close()
		}
	})
	b.Run("list", func(b *testing.B) {
		for range b.N {
			s := openFile(b)
			if ts, err := s.List(ctx, state.Filter{User: statetest.Alice, States: []state.State{state.StateDone}}); err != nil || len(ts) != n {
				b.Fatal(len(ts), err)
			}
			s.Close()
		}
	})
	b.Run("get-1000", func(b *testing.B) {
		s := openFile(b)
		defer s.Close()
		b.ResetTimer()
		for range b.N {
			for i := range 1000 {
				if _, err := s.Get(ctx, ids[(i*7919)%n]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
