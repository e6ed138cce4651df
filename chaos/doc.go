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
// TestProperty is the suite's property test: a seeded random sequence of
// requests that collide, aliases, hand-placed destination files, every
// failure class of the simulator, kills, stops and restarts, with a check
// after each step, from the file system, that every done transfer's file
// is present and unchanged and that no source and no file aso did not
// write was deleted or changed.
//
// `go test ./chaos` runs a short seeded selection and a short property
// sequence (ASO_CHAOS_SEED picks the seed); `make chaos` (ASO_CHAOS=full)
// runs every scenario on every backend it applies to, and a long property
// sequence. Both print a table of scenario, faults injected, transfers,
// lost, duplicated, stuck and result, and one of the property sequences,
// and fail if any invariant is broken.
//
// The package holds only tests; nothing may import it.
package chaos
