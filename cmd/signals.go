package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sirupsen/logrus"
)

// stopSignals stop aso gracefully: SIGHUP (a closed terminal, or a
// systemd reload of a unit without ExecReload) is treated as SIGTERM, so
// that it never leaves a run lock held and transfers claimed.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// signalLog is the logger signals are reported to once logging is set up;
// before that they are reported on stderr.
var signalLog atomic.Pointer[logrus.Logger]

// notifySignals returns a context cancelled by the first stop signal, and
// a function that stops watching. Every signal received is logged.
func notifySignals() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, stopSignals...)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case s := <-ch:
				logSignal(s, n)
				cancel()
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		wg.Wait()
		cancel()
	}
}

// logSignal reports the n-th stop signal received.
func logSignal(s os.Signal, n int) {
	what := "stopping gracefully: finishing the writes in flight, releasing claims and the run lock"
	if n > 1 {
		what = "second signal: stopping at once"
	}
	if l := signalLog.Load(); l != nil {
		l.WithFields(logrus.Fields{"signal": signalName(s), "count": n}).Warn("signal received: " + what)
		return
	}
	fmt.Fprintf(os.Stderr, "aso: %s received: %s\n", signalName(s), what)
}

// signalName is the conventional name of s (SIGTERM, not "terminated").
func signalName(s os.Signal) string {
	if sig, ok := s.(syscall.Signal); ok {
		switch sig {
		case syscall.SIGINT:
			return "SIGINT"
		case syscall.SIGTERM:
			return "SIGTERM"
		case syscall.SIGHUP:
			return "SIGHUP"
		}
	}
	return s.String()
}

// onStopSignals calls first (if not nil) once ctx is cancelled (by the
// first stop signal), then second on the next stop signal. The returned
// function stops watching.
func onStopSignals(ctx context.Context, first, second func()) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, stopSignals...)
		defer signal.Stop(ch)
		if first != nil {
			first()
		}
		select {
		case <-done:
		case <-ch:
			second()
		}
	}()
	return func() { close(done) }
}
