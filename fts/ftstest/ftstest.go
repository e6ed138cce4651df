package ftstest

import (
	"testing"
	"time"

	"github.com/asyncstageout/aso/fts/ftssim"
)

// The simulator's types, under the names tests have always used.
type (
	// Options configure a simulator (ftssim.Options).
	Options = ftssim.Options
	// TLSOptions configure HTTPS and client certificates (ftssim.TLSOptions).
	TLSOptions = ftssim.TLSOptions
	// Server is a simulator listening on a port (ftssim.Server).
	Server = ftssim.Server
	// SimFile is one file the simulator received (ftssim.SimFile).
	SimFile = ftssim.SimFile
)

// Start serves a new simulator on addr (ftssim.Start).
func Start(addr string, opts Options) (*Server, error) { return ftssim.Start(addr, opts) }

// NewServer starts a simulator on 127.0.0.1:0 for a test, like
// httptest.NewServer, and closes it when the test ends.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := ftssim.Start("127.0.0.1:0", opts)
	if err != nil {
		t.Fatalf("ftstest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("ftstest: close: %v", err)
		}
	})
	return s
}

// NewPKI makes a throw-away PKI (MakePKI) whose CA directory is a
// test temporary directory; it fails the test on error.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	p, err := MakePKI(t.TempDir())
	if err != nil {
		t.Fatalf("ftstest: %v", err)
	}
	return p
}

// NewProxy makes another proxy of p's user (MakeProxy), a VOMS proxy
// when fqans are given; it fails the test on error.
func NewProxy(t testing.TB, p *PKI, lifetime time.Duration, fqans ...string) []byte {
	t.Helper()
	b, err := MakeProxy(p, lifetime, fqans...)
	if err != nil {
		t.Fatalf("ftstest: %v", err)
	}
	return b
}
