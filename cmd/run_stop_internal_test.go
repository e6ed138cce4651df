package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// TestStoppedEarly: a setup step cut short by a stop signal ends the run
// as stopped (exit 0, a warning), not as a credential to fix (78) or a
// failure (1); the same errors without the signal keep their exit codes.
func TestStoppedEarly(t *testing.T) {
	var logs bytes.Buffer
	g := &Globals{Log: logrus.New()}
	g.Log.SetOutput(&logs)
	stopped, stop := context.WithCancel(context.Background())
	stop()
	cut := fmt.Errorf("fts delegation: fts: delegation d6b1: credential: %w", context.Canceled)
	refused := errors.New("fts delegation: 403 Forbidden")
	cases := []struct {
		name string
		ctx  context.Context
		err  error
		want int
	}{
		{"delegation cut by a signal", stopped, permanent(cut), ExitOK},
		{"store open cut by a signal", stopped, fmt.Errorf("couch: open: %w", context.Canceled), ExitOK},
		{"delegation refused, then a signal", stopped, permanent(refused), ExitConfig},
		{"delegation cancelled without a signal", context.Background(), permanent(cut), ExitConfig},
	}
	for _, c := range cases {
		logs.Reset()
		if got := ExitCode(stoppedEarly(c.ctx, g, c.err)); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
		if warned := strings.Contains(logs.String(), "stopped by a signal"); warned != (c.want == ExitOK) {
			t.Errorf("%s: log %q", c.name, logs.String())
		}
	}
}
