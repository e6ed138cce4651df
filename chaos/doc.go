// Package chaos is aso's fault suite. Its tests run `aso run` as real
// processes (internal/proctest) against the FTS3 simulator and the state
// store, inject faults from outside the agent, and then check from outside
// that nothing was lost, nothing was submitted twice and nothing is stuck:
//
//   - network faults between the agent and CouchDB and between the agent and
//     FTS, through toxiproxy proxies on loopback (latency, connection resets,
//     the server down for a while, half-open and slowly closed connections);
//   - FTS faults from the simulator (bursts of 503, lost jobs, hangs longer
//     than every timeout, 419 asking for delegation mid-run over X.509);
//   - process faults (SIGKILL at seeded random moments, SIGTERM in each
//     phase, two agents started at once, agents of two users side by side,
//     an agent paused past its lease while another takes over);
//   - storage faults (gfal-rm hanging or failing, a full disk under the
//     memfile, a journal ending in a torn record or cut in the middle of
//     its last record);
//   - kill requests during the run, and a storm mixing all of the above.
//
// `go test ./chaos` runs a short seeded selection (ASO_CHAOS_SEED picks the
// seed); `make chaos` (ASO_CHAOS=full) runs every scenario on every backend
// it applies to. Both print a table of scenario, faults injected,
// transfers, lost, duplicated, stuck and result, and fail if any invariant
// is broken.
//
// The package holds only tests; nothing may import it.
package chaos
