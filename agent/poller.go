package agent

import "time"

// DefaultFirstPoll is the wait aso run gives a pass after one that changed
// something: a job submitted is asked about this soon, and transfers that
// ended may have freed others (dependents, retries) for the next claim.
const DefaultFirstPoll = 2 * time.Second

// Early passes: a pass run after a wait shorter than the interval costs
// FTS a status request that a fixed interval would not have made. A run
// may spend pollRampPasses of them at any time (the ramp after a
// submission: 2, 4, 8, 16 and 32 s with the defaults), and beyond that one
// in ten of the passes a fixed interval would have run by then, so that
// an hour's polling costs at most 10% more status requests than polling
// every interval.
const (
	pollRampPasses  = 5
	pollExtraPerMil = 100 // of the passes at a fixed interval
)

// Poller is the agent's policy of how long to wait between passes. After a
// pass that changed something (claimed, submitted or ended transfers) it
// waits the first poll, then doubles the wait after each pass that changed
// nothing, up to the interval; it shortens the wait again when a pass
// changes something, while its budget of early passes lasts. With the
// first poll equal to the interval it waits the interval every time.
type Poller struct {
	first, interval time.Duration
	wait            time.Duration // the last wait given
	start           time.Time
	early           int // waits given shorter than the interval
}

// NewPoller returns the policy of a run that started at start, waiting
// first after a change and at most interval (first is raised to no more
// than interval; zero or less means interval).
func NewPoller(first, interval time.Duration, start time.Time) *Poller {
	if first <= 0 || first > interval {
		first = interval
	}
	return &Poller{first: first, interval: interval, wait: interval, start: start}
}

// Next returns the wait before the next pass, after a pass that ended at
// now and changed something or not.
func (p *Poller) Next(changed bool, now time.Time) time.Duration {
	w := min(2*p.wait, p.interval)
	if changed {
		w = p.first
	}
	if w < p.interval && !p.mayRunEarly(now) {
		w = p.interval
	}
	if w < p.interval {
		p.early++
	}
	p.wait = w
	return w
}

// mayRunEarly tells whether the budget of early passes has one left at
// now: pollRampPasses, or a tenth of the passes a fixed interval would
// have run since the start, whichever is more.
func (p *Poller) mayRunEarly(now time.Time) bool {
	fixed := int64(now.Sub(p.start) / p.interval)
	budget := max(int64(pollRampPasses), fixed*pollExtraPerMil/1000)
	return int64(p.early) < budget
}
