package proctest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// AwaitStore waits until ok holds, at most d: it checks ok at once and
// after each change of the state store, a write of the state file
// (inotify) on a memfile World, a change in the database's _changes feed
// (longpoll) on a CouchDB World. It gives up, with a last check, when stop
// is closed (a process the caller relies on has exited) or d has passed.
func (w *World) AwaitStore(d time.Duration, stop <-chan struct{}, ok func() bool) bool {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	changed, err := w.storeChanges(ctx)
	if err != nil {
		w.t.Fatalf("proctest: watch the state store: %v", err)
	}
	return awaitChanges(ctx, changed, stop, ok)
}

// storeChanges starts watching the store until ctx ends and returns a
// function whose channel is closed at the next change after its call.
func (w *World) storeChanges(ctx context.Context) (func() <-chan struct{}, error) {
	if !w.opts.Couch {
		fw, err := watchFile(strings.TrimPrefix(w.StateURL, "file:"))
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, fw.close)
		return fw.changed, nil
	}
	db := w.CouchURL(couch.RoleProducer)
	var info struct {
		Seq json.RawMessage `json:"update_seq"`
	}
	if err := getJSON(ctx, db, &info); err != nil {
		return nil, err
	}
	fw := &wakeup{} // woken by the feed below
	go func() {
		since := strings.Trim(string(info.Seq), `"`)
		for ctx.Err() == nil {
			var feed struct {
				Last json.RawMessage `json:"last_seq"`
			}
			if err := getJSON(ctx, db+"/_changes?feed=longpoll&timeout=10000&since="+url.QueryEscape(since), &feed); err != nil {
				fw.wake() // a last look; then the caller's deadline
				return
			}
			if s := strings.Trim(string(feed.Last), `"`); s != since {
				since = s
				fw.wake()
			}
		}
	}()
	return fw.changed, nil
}

// getJSON decodes the answer of a GET of u into v.
func getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", couchtest.WithoutAuth(u), resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
