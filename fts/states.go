package fts

// TerminalJobState reports whether an FTS job in state s is done for good:
// FINISHED, FAILED, FINISHEDDIRTY or CANCELED.
func TerminalJobState(s string) bool {
	switch s {
	case "FINISHED", "FAILED", "FINISHEDDIRTY", "CANCELED":
		return true
	}
	return false
}
