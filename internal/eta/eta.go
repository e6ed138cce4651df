// Package eta estimates how fast a run goes and when it ends, from the
// rate at which it has finished its work since it started: the whole run,
// waits included, not the last burst of finished transfers (a job of FTS
// ends its files together, and a rate over the last seconds would promise
// an end in seconds for a run that takes minutes).
package eta

import (
	"fmt"
	"time"
)

// Unknown stands for a rate or a time not known yet: nothing has finished.
const Unknown = "–"

// Meter measures the rate of a run that started at Start: what it has
// finished by the latest observation, over the time since Start.
type Meter struct {
	start time.Time
	base  int // finished at Start (an operation that resumes counts on)
	n     int
}

// New returns the meter of a run that started at start, with base units
// already finished then.
func New(start time.Time, base int) *Meter { return &Meter{start: start, base: base, n: base} }

// Observe records that n units had finished by now (n never decreases).
func (m *Meter) Observe(n int) { m.n = max(m.n, n) }

// PerSecond is the run's rate at now, and whether one is known: not until
// a unit has finished.
func (m *Meter) PerSecond(now time.Time) (float64, bool) {
	d := now.Sub(m.start).Seconds()
	if m.n == m.base || d <= 0 {
		return 0, false
	}
	return float64(m.n-m.base) / d, true
}

// Left is how long left more units take at the run's rate, and whether
// that is known.
func (m *Meter) Left(now time.Time, left int) (time.Duration, bool) {
	r, ok := m.PerSecond(now)
	if !ok {
		return 0, left == 0
	}
	return time.Duration(float64(left) / r * float64(time.Second)).Round(time.Second), true
}

// Text gives the rate and the time left to finish left units at it:
// "2.1/s · ETA 6m20s", "–/s · ETA –" until a unit has finished.
func (m *Meter) Text(now time.Time, left int) string {
	r, ok := m.PerSecond(now)
	rate := Unknown
	if ok {
		rate = Rate(r)
	}
	eta := Unknown
	if d, ok := m.Left(now, left); ok {
		eta = d.String()
	}
	return fmt.Sprintf("%s/s · ETA %s", rate, eta)
}

// Rate writes a rate: one decimal below 10, none from 10 on.
func Rate(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}
