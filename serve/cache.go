package serve

import (
	"context"
	"sync"
	"time"
)

// loadTimeout bounds one load of the cache, whoever asked for it: a load
// is shared by every request waiting for it, so it does not end with the
// request that started it.
const loadTimeout = time.Minute

// maxEntries bounds the entries a cache keeps (one per user and page kind
// at most); past it, expired entries are dropped.
const maxEntries = 1000

// cache keeps what a load returned for ttl, and makes the requests that
// arrive while a load runs wait for it instead of loading again.
type cache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]*entry
}

type entry struct {
	done chan struct{} // closed when the load ended
	at   time.Time     // when the load started
	v    any
	err  error
}

func newCache(ttl time.Duration, now func() time.Time) *cache {
	return &cache{ttl: ttl, now: now, entries: map[string]*entry{}}
}

// get returns the value of key, loading it when there is none younger than
// the TTL. A failed load is not kept: the next request tries again.
func (c *cache) get(ctx context.Context, key string, load func(context.Context) (any, error)) (any, error) {
	c.mu.Lock()
	e := c.entries[key]
	if e == nil || c.expired(e) {
		e = &entry{done: make(chan struct{}), at: c.now()}
		c.prune()
		c.entries[key] = e
		go c.fill(ctx, key, e, load)
	}
	c.mu.Unlock()
	select {
	case <-e.done:
		return e.v, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *cache) fill(ctx context.Context, key string, e *entry, load func(context.Context) (any, error)) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
	defer cancel()
	v, err := load(lctx)
	c.mu.Lock()
	e.v, e.err = v, err
	if err != nil && c.entries[key] == e {
		delete(c.entries, key)
	}
	c.mu.Unlock()
	close(e.done)
}

// expired reports whether e is a finished load older than the TTL; c.mu
// is held.
func (c *cache) expired(e *entry) bool {
	select {
	case <-e.done:
		return !c.now().Before(e.at.Add(c.ttl))
	default:
		return false // still loading: wait for it
	}
}

// prune drops the expired entries once there are too many; c.mu is held.
func (c *cache) prune() {
	if len(c.entries) < maxEntries {
		return
	}
	for k, e := range c.entries {
		if c.expired(e) {
			delete(c.entries, k)
		}
	}
}
