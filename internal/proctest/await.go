package proctest

import (
	"context"
	"time"
)

// AwaitFile waits until ok holds, at most d: it checks ok at once and
// after each write to the file at path (which may not exist yet), woken by
// inotify. It gives up, with a last check, when stop is closed or d has
// passed.
func AwaitFile(path string, d time.Duration, stop <-chan struct{}, ok func() bool) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	fw, err := watchFile(path)
	if err != nil {
		return false, err
	}
	defer fw.close()
	return awaitChanges(ctx, fw.changed, stop, ok), nil
}

// awaitChanges checks ok at once and each time the channel of changed is
// closed, until ok holds (true) or stop is closed or ctx ends (a last
// check).
func awaitChanges(ctx context.Context, changed func() <-chan struct{}, stop <-chan struct{}, ok func() bool) bool {
	for {
		next := changed() // before the check: no change goes unnoticed
		if ok() {
			return true
		}
		select {
		case <-next:
		case <-stop:
			return ok()
		case <-ctx.Done():
			return ok()
		}
	}
}
