// Package agent is aso's TransferAgent: the loop that claims a user's
// transfers, submits them to FTS3 in bulk, monitors the jobs, deletes the
// destination copy of failed transfers, and records every outcome, until the
// user's queue has drained.
//
// The loop is level-based: every pass re-reads the state store and FTS, so a
// restart at any point is harmless. The agent writes nothing it does not
// hold: it takes the user's run lock first, keeps it and its transfers'
// leases renewed, and stops all work at once if either is lost.
//
// It must not read flags or the environment (cmd does), and it talks to the
// state store, FTS and storage only through the interfaces below.
package agent
