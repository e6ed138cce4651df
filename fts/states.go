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

// TerminalFileState reports whether a file in state s needs no more
// watching: FINISHED, FAILED, CANCELED, and NOT_USED (an alternative
// replica or hop that was not used, final once its job is).
func TerminalFileState(s string) bool {
	switch s {
	case "FINISHED", "FAILED", "CANCELED", "NOT_USED":
		return true
	}
	return false
}
