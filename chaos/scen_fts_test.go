package chaos_test

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/asyncstageout/aso/fts/ftstest"
)

// ftsScenarios are faults of the FTS server itself, from the simulator.
func ftsScenarios() []scenario {
	return []scenario{
		{
			name: "fts-503-bursts", ci: []backend{memfile},
			run: func(e *env) {
				e.underFaults(func(ctx context.Context) {
					e.every(ctx, 100*time.Millisecond, 600*time.Millisecond, func() {
						n := e.intn(1, 8)
						e.w.Sim.Fail503(n)
						e.faults.add("fts.503", n)
					})
					e.w.Sim.Fail503(0)
				})
			},
		},
		{
			// FTS forgets jobs that are still running: the agent gets 404
			// and must put their transfers back in the queue.
			name: "fts-lost-jobs", ci: []backend{couch},
			run: func(e *env) {
				e.underFaults(func(ctx context.Context) {
					e.every(ctx, 200*time.Millisecond, 700*time.Millisecond, e.loseOneJob)
				})
			},
		},
		{
			// FTS holds every request longer than every timeout of the agent
			// (each FTS request's and each phase's).
			name: "fts-hang", ci: []backend{memfile},
			run: func(e *env) {
				e.underFaults(func(ctx context.Context) {
					defer e.w.Sim.SetHang(false)
					e.every(ctx, 300*time.Millisecond, time.Second, func() {
						e.w.Sim.SetHang(true)
						e.faults.add("fts.hang", 1)
						sleep(ctx, e.between(2500*time.Millisecond, 5*time.Second))
						e.w.Sim.SetHang(false)
					})
				}, "--fts-timeout", "1s", "--phase-timeout", "2s")
			},
		},
		{
			// X.509 over TLS with delegation required: the server's copy
			// of the proxy expires again and again mid-run, so
			// submissions get 419 and the agent must delegate again.
			name: "fts-delegation-419", ci: []backend{memfile},
			sim: func(e *env, o *ftstest.Options) {
				e.pki = ftstest.NewPKI(e.t)
				o.TLS = &ftstest.TLSOptions{Cert: e.pki.Server, ClientCAs: e.pki.CAPool}
				o.RequireDelegation = true
			},
			prepare: func(e *env) {
				proxy := filepath.Join(e.w.Dir, "x509up")
				if err := os.WriteFile(proxy, e.pki.ProxyPEM, 0o600); err != nil {
					e.t.Fatal(err)
				}
				e.args = append(e.args, "--token-file=", "--proxy", proxy, "--cert-dir", e.pki.CADir)
			},
			run: func(e *env) {
				expire := func() {
					e.w.Sim.ExpireDelegation()
					e.faults.add("fts.expire_delegation", 1)
				}
				e.underFaults(func(ctx context.Context) {
					// the first expiry right after the first submission, so
					// that the rest of the run's submissions meet it even
					// when the agent drains before the first period ends
					select {
					case <-e.w.Sim.Arrival("submit"):
						expire()
					case <-ctx.Done():
						return
					}
					e.every(ctx, 300*time.Millisecond, 900*time.Millisecond, expire)
				})
				if n := e.w.Sim.Requests()["delegation"]; n < 2 {
					e.violate("the proxy was delegated %d times; want a delegation after an expiry", n)
				}
			},
		},
	}
}

// loseOneJob makes the simulator lose a random job that is not finished.
func (e *env) loseOneJob() {
	var live []string
	for _, f := range e.w.Sim.Files() {
		if f.Finished == nil && !e.isLost(f.JobID) {
			live = append(live, f.JobID)
		}
	}
	if len(live) == 0 {
		return
	}
	job := live[e.intn(0, len(live)-1)]
	e.mu.Lock()
	e.lostJobs[job] = true
	e.mu.Unlock()
	e.w.Sim.LoseJob(job)
	e.faults.add("fts.lose_job", 1)
}

func (e *env) isLost(job string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lostJobs[job]
}

// killScenario asks `aso kill` for random queued and running transfers
// while connections to FTS are reset now and then: every killed transfer
// must be cancelled in FTS and its destination copy deleted.
func killScenario() scenario {
	return scenario{
		name: "kill-requests", ci: []backend{couch},
		run: func(e *env) {
			e.underFaults(func(ctx context.Context) {
				e.every(ctx, 150*time.Millisecond, 500*time.Millisecond, func() {
					all := e.w.Expected()
					ids := make([]string, 0, 3)
					for range 3 {
						ids = append(ids, all[e.intn(0, len(all)-1)].ID())
					}
					kctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					defer cancel()
					res, err := e.w.Store().RequestKill(kctx, ids)
					if err != nil {
						return
					}
					for _, r := range res {
						if r.Err == nil {
							e.faults.add("kill_request", 1)
						}
					}
					if e.intn(0, 3) == 0 {
						rm := e.fts.toxic("reset_peer", "upstream", map[string]any{"timeout": 0})
						sleep(ctx, 100*time.Millisecond)
						rm()
					}
				})
			})
		},
	}
}

// stormScenario injects a seeded random mix of every fault that can be
// injected while agents run: resets and outages of the links to FTS and
// CouchDB, 503 bursts, lost jobs, FTS hangs and SIGKILL of the agent.
func stormScenario() scenario {
	return scenario{
		name: "storm", ci: []backend{couch},
		run: func(e *env) {
			faults := []func(ctx context.Context){
				func(ctx context.Context) {
					rm := e.fts.toxic("reset_peer", "upstream", map[string]any{"timeout": e.intn(0, 50)})
					sleep(ctx, e.between(50*time.Millisecond, 300*time.Millisecond))
					rm()
				},
				func(ctx context.Context) {
					e.fts.down()
					sleep(ctx, e.between(200*time.Millisecond, time.Second))
					e.fts.up()
				},
				func(context.Context) {
					n := e.intn(1, 6)
					e.w.Sim.Fail503(n)
					e.faults.add("fts.503", n)
				},
				func(context.Context) { e.loseOneJob() },
				func(ctx context.Context) {
					e.w.Sim.SetHang(true)
					e.faults.add("fts.hang", 1)
					sleep(ctx, e.between(time.Second, 2500*time.Millisecond))
					e.w.Sim.SetHang(false)
				},
				func(context.Context) { e.killCurrent() },
			}
			if e.couch != nil {
				faults = append(faults,
					func(ctx context.Context) {
						rm := e.couch.toxic("reset_peer", "upstream", map[string]any{"timeout": e.intn(0, 50)})
						sleep(ctx, e.between(50*time.Millisecond, 300*time.Millisecond))
						rm()
					},
					func(ctx context.Context) {
						e.couch.down()
						sleep(ctx, e.between(200*time.Millisecond, time.Second))
						e.couch.up()
					})
			}
			e.underFaults(func(ctx context.Context) {
				defer e.w.Sim.SetHang(false)
				defer e.w.Sim.Fail503(0)
				e.every(ctx, 100*time.Millisecond, 500*time.Millisecond, func() {
					faults[e.intn(0, len(faults)-1)](ctx)
				})
			}, "--fts-timeout", "1s", "--phase-timeout", "3s")
		},
	}
}
