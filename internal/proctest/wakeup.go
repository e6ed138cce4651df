package proctest

import "sync"

// wakeup is a broadcast of "something changed": changed returns a channel
// that the next wake closes. Take the channel before looking at what may
// change, so that no change between the look and the wait goes unnoticed.
type wakeup struct {
	mu   sync.Mutex
	next chan struct{}
}

func (w *wakeup) changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next == nil {
		w.next = make(chan struct{})
	}
	return w.next
}

func (w *wakeup) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next != nil {
		close(w.next)
		w.next = nil
	}
}
