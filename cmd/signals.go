package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// stopSignals stop aso gracefully: SIGHUP (a closed terminal, or a
// systemd reload of a unit without ExecReload) is treated as SIGTERM, so
// that it never leaves a run lock held and transfers claimed.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// signalLog is the logger signals are reported to once logging is set up;
// before that they are reported on stderr.
var signalLog atomic.Pointer[logrus.Logger]

// stopSignal is the cause of the context a stop signal cancelled. A
// command that stops short because of it, and says so (enqueue), exits
// 128 + the signal's number, as a shell reports a process a signal ended
// (130 for SIGINT).
type stopSignal struct{ sig os.Signal }

func (e *stopSignal) Error() string { return "stopped by " + signalName(e.sig) }

// Is makes a stop a cancellation (errors.Is(err, context.Canceled)): what
// a signal cut short is no error of its own (see stoppedEarly).
func (e *stopSignal) Is(target error) bool { return target == context.Canceled }

// code is the exit code of a command the signal stopped short.
func (e *stopSignal) code() int {
	if n, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return ExitError
}

// stopDoes says what a stop signal makes the running command do, in the
// log line of the signal (set by loadGlobals for the command).
var stopDoes atomic.Pointer[string]

// secondSignalTaken is set by a command that handles a second stop signal
// itself (onStopSignals): the run's exit, the fleet's kill of its agents.
// Otherwise a second signal ends the process at once.
var secondSignalTaken atomic.Bool

// stopActions says what the first stop signal makes each command do; the
// commands not named stop after the store call in flight.
var stopActions = map[string]string{
	"run":     "stopping gracefully: finishing the writes in flight, releasing claims and the run lock",
	"enqueue": "stopping: no more input is read; the records read so far are stored and counted",
}

// setStopAction sets the text of the stop signal's log line for command.
func setStopAction(command string) {
	what, ok := stopActions[command]
	if !ok {
		what = "stopping after the state-store call in flight"
	}
	stopDoes.Store(&what)
}

// notifySignals returns a context cancelled by the first stop signal (its
// cause a *stopSignal), and a function that stops watching. Every signal
// received is logged; a second one ends the process at once unless the
// command handles it (secondSignalTaken).
func notifySignals() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
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
				if n > 1 && !secondSignalTaken.Load() {
					os.Exit((&stopSignal{s}).code())
				}
				cancel(&stopSignal{s})
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		wg.Wait()
		cancel(nil)
	}
}

// logSignal reports the n-th stop signal received.
func logSignal(s os.Signal, n int) {
	what := "stopping"
	if p := stopDoes.Load(); p != nil {
		what = *p
	}
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
	if sig, ok := s.(syscall.Signal); ok && unix.SignalName(sig) != "" {
		return unix.SignalName(sig)
	}
	return s.String()
}

// onStopSignals calls first (if not nil) once ctx is cancelled (by the
// first stop signal), then second on the next stop signal. The returned
// function stops watching. It listens from the call on: a second signal
// sent right after the first is not missed while ctx's cancellation is
// being noticed.
func onStopSignals(ctx context.Context, first, second func()) func() {
	secondSignalTaken.Store(true)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, stopSignals...)
	before := ctx.Err() != nil // stopped before the call: the next signal is the second
	done := make(chan struct{})
	go func() {
		defer signal.Stop(ch)
		seen := 0 // stop signals received since the call
		for ctx.Err() == nil {
			select {
			case <-done:
				return
			case <-ch:
				seen++ // the first: ctx is being cancelled
			case <-ctx.Done():
			}
		}
		if first != nil {
			first()
		}
		want := 1
		if !before && stoppedBySignal(ctx) {
			want = 2 // the signal that stopped ctx came on ch too
		}
		for seen < want {
			select {
			case <-done:
				return
			case <-ch:
				seen++
			}
		}
		second()
	}()
	return func() { close(done) }
}

// stoppedBySignal reports whether ctx was cancelled by a stop signal.
func stoppedBySignal(ctx context.Context) bool {
	var s *stopSignal
	return errors.As(context.Cause(ctx), &s)
}
