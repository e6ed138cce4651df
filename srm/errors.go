package srm

import (
	"errors"
	"fmt"
)

// Conditions a ResolveError (and a load error) can carry, checked with
// errors.Is.
var (
	// ErrUnknownSite: the sites file does not name the site.
	ErrUnknownSite = errors.New("unknown site")
	// ErrNoMatch: no rule of the protocol matches the LFN (and destination).
	ErrNoMatch = errors.New("no rule matches")
	// ErrBadCatalog: a catalogue is malformed (bad regular expression,
	// unknown chain protocol, chain loop, a result too long, ...).
	ErrBadCatalog = errors.New("bad catalogue")
	// ErrBadLFN: the LFN is empty, too long or contains control characters.
	ErrBadLFN = errors.New("bad LFN")
)

// ResolveError says why an LFN could not be resolved at a site.
type ResolveError struct {
	Site, Protocol, LFN, Reason string

	err error // one of the Err* conditions above
}

// Error names the site, the protocol (when the site is known) and the LFN.
func (e *ResolveError) Error() string {
	lfn := e.LFN
	if len(lfn) > 200 {
		lfn = lfn[:200] + "..."
	}
	if e.Protocol == "" {
		return fmt.Sprintf("srm: resolve LFN %q at site %s: %s", lfn, e.Site, e.Reason)
	}
	return fmt.Sprintf("srm: resolve LFN %q at site %s with protocol %s: %s", lfn, e.Site, e.Protocol, e.Reason)
}

// Unwrap returns the condition (ErrNoMatch, ErrUnknownSite, ErrBadCatalog or
// ErrBadLFN).
func (e *ResolveError) Unwrap() error { return e.err }
