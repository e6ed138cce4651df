package state

// LastVerification returns the entry of t's last verification, and
// whether it still holds: a transfer that moved to another state since
// (retried, copied again) has none.
func (t *Transfer) LastVerification() (Transition, bool) {
	for i := len(t.History) - 1; i >= 0; i-- {
		switch h := t.History[i]; {
		case h.Verified != "":
			return h, true
		case h.From != h.To:
			return Transition{}, false
		}
	}
	return Transition{}, false
}

// VerifiedAs is the result of t's last verification that still holds
// (LastVerification), "" for none.
func (t *Transfer) VerifiedAs() VerifyResult {
	v, _ := t.LastVerification()
	return v.Verified
}
