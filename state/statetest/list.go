package statetest

import (
	"reflect"
	"slices"
	"time"

	"github.com/asyncstageout/aso/state"
)

var listCases = []testCase{
	{"List/MoreFilters", func(e *env) {
		s := e.store(Alice, "agent-a")
		old := e.enqueue(s, Req(Alice, 0), Req(Alice, 1))
		e.clock.Advance(time.Hour)
		since := e.clock.Now()
		r := Req(Alice, 2)
		r.SourceLFN, r.DestinationLFN = "/store/temp/user/alice/sub/x.root", "/store/user/alice/sub/x.root"
		sub := e.enqueue(s, r)[0]
		e.clock.Advance(time.Hour)
		job := e.submit(s, 1, "job-7")[0] // the oldest: old[0] (claim order)
		cases := []struct {
			name string
			f    state.Filter
			want []string
		}{
			{"lfn prefix", state.Filter{LFN: "/store/user/alice/sub/"}, []string{sub}},
			{"lfn prefix of the source", state.Filter{LFN: "/store/temp/user/alice/out_1"}, []string{old[1]}},
			{"lfn glob", state.Filter{LFN: "/store/user/alice/out_*.root"}, old},
			{"lfn glob does not cross /", state.Filter{LFN: "/store/user/*.root"}, []string{}},
			{"lfn glob of a subdirectory", state.Filter{LFN: "/store/user/alice/*/*.root"}, []string{sub}},
			{"fts job", state.Filter{FTSJob: "job-7"}, []string{job.ID}},
			{"fts job and lfn", state.Filter{FTSJob: "job-7", LFN: "/store/user/alice/sub/"}, []string{}},
			{"since", state.Filter{Since: since}, []string{job.ID, sub}},
			{"since and state", state.Filter{Since: since, States: []state.State{state.StateNew}}, []string{sub}},
			{"id prefix", state.Filter{IDPrefix: sub[:10]}, []string{sub}},
			{"id prefix and other user", state.Filter{IDPrefix: sub[:10], User: Bob}, []string{}},
		}
		for _, c := range cases {
			got, err := s.List(ctx, c.f)
			if err != nil {
				e.t.Fatalf("%s: %v", c.name, err)
			}
			if got := ids(got); !reflect.DeepEqual(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
				e.t.Fatalf("%s: listed %v, want %v", c.name, got, c.want)
			}
		}
	}},
	{"List/Paging", func(e *env) {
		s := e.store(Alice, "agent-a")
		// one batch shares its created time: pages must cut between them
		var reqs []state.Request
		for i := 0; i < 7; i++ {
			reqs = append(reqs, Req(Alice, i))
		}
		batch := e.enqueue(s, reqs...)
		slices.Sort(batch)
		e.clock.Advance(time.Second)
		later := e.enqueue(s, Req(Alice, 50), Req(Bob, 51))
		want := append(append([]string{}, batch...), later[0])
		if later[1] < later[0] {
			want = append(want[:7], later[1], later[0])
		} else {
			want = append(want, later[1])
		}
		alices := append(append([]string{}, batch...), later[0])
		for _, f := range []state.Filter{{Limit: 2}, {Limit: 3, States: []state.State{state.StateNew}}, {Limit: 1, LFN: "/store/user/"},
			{Limit: 2, User: Alice}, {Limit: 3, User: Alice, States: []state.State{state.StateNew, state.StateDone}}} {
			want := want
			if f.User == Alice {
				want = alices
			}
			var got []string
			for page := 0; page < 20; page++ {
				ts, err := s.List(ctx, f)
				if err != nil {
					e.t.Fatal(err)
				}
				if len(ts) > f.Limit {
					e.t.Fatalf("page of %d with limit %d", len(ts), f.Limit)
				}
				if len(ts) == 0 {
					break
				}
				got = append(got, ids(ts)...)
				k := state.KeyOf(&ts[len(ts)-1])
				f.After = &k
			}
			if !reflect.DeepEqual(got, want) {
				e.t.Fatalf("pages of %+v gave\n%v, want\n%v", f, got, want)
			}
		}
	}},
}
