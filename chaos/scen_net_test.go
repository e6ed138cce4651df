package chaos_test

import (
	"context"
	"time"
)

// netScenarios are the network faults, on the link to FTS (both backends)
// and on the link to CouchDB.
func netScenarios() []scenario {
	var out []scenario
	for _, l := range []struct {
		name string
		on   []backend
		pick func(e *env) *link
	}{
		{"fts", []backend{memfile, couch}, func(e *env) *link { return e.fts }},
		{"couch", []backend{couch}, func(e *env) *link { return e.couch }},
	} {
		pick := l.pick
		out = append(out,
			scenario{
				name: "net-" + l.name + "-latency", on: l.on, ci: ciFor(l.name, memfile, couch),
				run: func(e *env) {
					e.underFaults(func(ctx context.Context) {
						lk := pick(e)
						defer lk.toxic("latency", "downstream", map[string]any{"latency": 150, "jitter": 100})()
						defer lk.toxic("latency", "upstream", map[string]any{"latency": 30})()
						<-ctx.Done()
					})
				},
			},
			scenario{
				name: "net-" + l.name + "-reset", on: l.on, ci: ciFor(l.name, memfile, couch),
				run: func(e *env) {
					e.underFaults(func(ctx context.Context) {
						lk := pick(e)
						e.every(ctx, 100*time.Millisecond, 500*time.Millisecond, func() {
							rm := lk.toxic("reset_peer", "upstream", map[string]any{"timeout": e.intn(0, 50)})
							sleep(ctx, e.between(50*time.Millisecond, 300*time.Millisecond))
							rm()
						})
					})
				},
			},
			scenario{
				name: "net-" + l.name + "-down", on: l.on, ci: ciFor(l.name, memfile),
				run: func(e *env) {
					e.underFaults(func(ctx context.Context) {
						lk := pick(e)
						e.every(ctx, 200*time.Millisecond, 800*time.Millisecond, func() {
							lk.down()
							sleep(ctx, e.between(300*time.Millisecond, 1500*time.Millisecond))
							lk.up()
						})
					})
				},
			},
			scenario{
				// A connection that takes the request and never answers
				// nor closes (timeout toxic with timeout 0), then one
				// that closes late (slow_close): every call must time
				// out and be retried.
				name: "net-" + l.name + "-halfopen", on: l.on, ci: ciFor(l.name),
				run: func(e *env) {
					e.underFaults(func(ctx context.Context) {
						lk := pick(e)
						e.every(ctx, 200*time.Millisecond, 600*time.Millisecond, func() {
							rm := lk.toxic("timeout", "downstream", map[string]any{"timeout": 0})
							sleep(ctx, e.between(500*time.Millisecond, 2*time.Second))
							rm()
							rm = lk.toxic("slow_close", "downstream", map[string]any{"delay": e.intn(200, 2000)})
							sleep(ctx, e.between(200*time.Millisecond, 1*time.Second))
							rm()
						})
					}, "--fts-timeout", "1s", "--phase-timeout", "3s")
				},
			},
		)
	}
	return out
}

// ciFor is the CI selection of a network scenario: on the FTS link the
// given backends, on the CouchDB link couch if listed.
func ciFor(link string, bs ...backend) []backend {
	if link == "couch" {
		for _, b := range bs {
			if b == couch {
				return []backend{couch}
			}
		}
		return nil
	}
	var out []backend
	for _, b := range bs {
		if b == memfile {
			out = append(out, memfile)
		}
	}
	return out
}
