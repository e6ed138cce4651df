package cmd

import (
	"net/http"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/asyncstageout/aso/internal/httplog"
)

func (g *Globals) setupLogging() error {
	if g.Log == nil {
		g.Log = logrus.New()
	}
	g.Log.SetOutput(g.Stderr)
	lvl, err := logrus.ParseLevel(g.LogLevel)
	if err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", g.LogLevel)
	}
	g.Log.SetLevel(lvl)
	tty := isTerminal(g.Stderr)
	format := g.LogFormat
	if format == "" {
		format = "json"
		if tty {
			format = "text"
		}
	}
	switch format {
	case "text":
		// the same lines whether they go straight to the terminal or
		// through the live display (which is not a terminal itself)
		g.Log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, ForceColors: tty, DisableColors: !tty})
	case "json":
		g.Log.SetFormatter(&logrus.JSONFormatter{})
	default:
		return usagef("--log-format %q: want text or json", format)
	}
	return nil
}

// httpLog returns the transport wrapper of the HTTP clients of service: it
// logs every request at debug (method, host, path without query, status,
// duration), a request still waiting for its reply at warn every
// stallReport, and, with warnFailures, a failed one (no reply, 5xx, 429) at
// warn, for a client that has no retry log of its own.
func (g *Globals) httpLog(service string, warnFailures bool) func(http.RoundTripper) http.RoundTripper {
	log := g.Log
	stall := func(r httplog.Record) {
		if log != nil {
			log.WithFields(logrus.Fields{
				"service": r.Service, "method": r.Method, "host": r.Host, "path": r.Path,
				"waited": r.Duration.Round(time.Second).String(),
			}).Warn("still waiting for " + service)
		}
	}
	return httplog.Wrap(service, func(r httplog.Record) {
		if log == nil {
			return
		}
		lvl, msg := logrus.DebugLevel, "HTTP request"
		if warnFailures && r.Failed() {
			lvl, msg = logrus.WarnLevel, "HTTP request failed; waiting for "+service
		}
		if !log.IsLevelEnabled(lvl) {
			return
		}
		e := log.WithFields(logrus.Fields{
			"service": r.Service, "method": r.Method, "host": r.Host, "path": r.Path,
			"status": r.Status, "duration": r.Duration.Round(time.Microsecond).String(),
		})
		if r.Err != nil {
			e = e.WithError(r.Err)
		}
		e.Log(lvl, msg)
	}, stall, stallReport)
}

// stallReport is how often a request that still waits for its reply is
// logged at warn.
const stallReport = 10 * time.Second

// ftsRetryLog logs each retry of an FTS request at warn: what is awaited,
// why, for how long so far, and when the next try is.
func (g *Globals) ftsRetryLog() func(method, path string, err error, wait, elapsed time.Duration) {
	log := g.Log
	return func(method, path string, err error, wait, elapsed time.Duration) {
		if log == nil {
			return
		}
		log.WithFields(logrus.Fields{
			"service": "fts", "method": method, "path": path,
			"waited": elapsed.Round(time.Millisecond).String(), "retry_in": wait.Round(time.Millisecond).String(),
		}).WithError(err).Warn("FTS request failed; retrying")
	}
}
