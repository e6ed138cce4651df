package ftssim

import "sync"

// faults counts the requests by kind and holds the faults a test injects
// in front of the API: a hang, 503 answers, a database that is down.
type faults struct {
	mu      sync.Mutex
	counts  map[string]int
	fail503 int
	failDB  int                      // the next requests that find the database down
	dbDown  bool                     // the database is down until setDatabaseDown(false)
	hang    chan struct{}            // non-nil while hanging; closed to release
	next    map[string]chan struct{} // by kind: closed at the next request
}

func newFaults() *faults {
	return &faults{counts: map[string]int{}, next: map[string]chan struct{}{}}
}

// admission is what a request meets before the API sees it.
type admission struct {
	hang    <-chan struct{} // wait for it to close (nil: no hang)
	fail503 bool            // answer 503
	dbDown  bool            // answer as a server whose database is down
}

// admit counts a request of kind and takes the faults it meets: a 503
// counts against Fail503's n, and otherwise a database failure against
// FailDatabase's.
func (f *faults) admit(kind string) admission {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[kind]++
	if c := f.next[kind]; c != nil {
		close(c)
		delete(f.next, kind)
	}
	a := admission{hang: f.hang, fail503: f.fail503 > 0, dbDown: f.dbDown || f.failDB > 0}
	if a.fail503 {
		f.fail503--
	}
	if f.failDB > 0 && !a.fail503 {
		f.failDB--
	}
	return a
}

// arrival returns a channel closed when the next request of kind comes.
func (f *faults) arrival(kind string) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.next[kind] == nil {
		f.next[kind] = make(chan struct{})
	}
	return f.next[kind]
}

// setHang holds every request (on) or releases them (off).
func (f *faults) setHang(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case on && f.hang == nil:
		f.hang = make(chan struct{})
	case !on && f.hang != nil:
		close(f.hang)
		f.hang = nil
	}
}

// set503 makes the next n requests answer 503.
func (f *faults) set503(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail503 = n
}

// setDatabaseDown turns the database off or on.
func (f *faults) setDatabaseDown(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dbDown = on
}

// failDatabase makes the next n requests find the database down.
func (f *faults) failDatabase(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failDB = n
}

// requests returns a copy of the counts by kind.
func (f *faults) requests() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.counts))
	for k, v := range f.counts {
		out[k] = v
	}
	return out
}
