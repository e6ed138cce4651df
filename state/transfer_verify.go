package state

// LastVerification returns the entry of t's last verification, and
// whether it has one.
func (t *Transfer) LastVerification() (Transition, bool) {
	for i := len(t.History) - 1; i >= 0; i-- {
		if t.History[i].Verified != "" {
			return t.History[i], true
		}
	}
	return Transition{}, false
}

// VerifiedAs is the result of t's last verification, "" for none.
func (t *Transfer) VerifiedAs() VerifyResult {
	v, _ := t.LastVerification()
	return v.Verified
}
