// Package proctest runs aso as real operating-system processes against a
// complete offline installation, for tests that prove what no in-process
// test can: that nothing is lost and nothing is submitted twice when agents
// are killed, stopped, signalled or run concurrently.
//
// A World is that installation: an FTS3 simulator (fts/ftstest) served by
// the test process on the real clock, two file:// sites with generated
// source files, a sites file, a bearer-token file, and a state store (a
// memfile or a fresh CouchDB database). World.Start runs `aso` as a child
// process, with a bounded lifetime and its logs in a file; Proc signals it
// (SIGKILL, SIGTERM, SIGSTOP, SIGCONT) and waits for its exit code.
// World.Check reads the store and the simulator's ledger from outside and
// returns a Report of every broken invariant, with counts (transfers, lost,
// duplicated, stuck) for tables.
//
// The children run an aso binary built once per test process with go build
// (Binary); call Cleanup at the end of TestMain to remove it:
//
//	func TestMain(m *testing.M) {
//		code := couchtest.Main(m)
//		proctest.Cleanup()
//		os.Exit(code)
//	}
//
// It is for tests only and must not be imported by production code.
package proctest
