package ftssim

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/asyncstageout/aso/internal/gridcert"
)

// Server is a Simulator listening on a port.
type Server struct {
	*Simulator
	// URL is the base URL, like "https://127.0.0.1:34567", without a
	// trailing slash.
	URL string

	srv       *http.Server
	ln        net.Listener
	transport *http.Transport
	done      chan error
}

// Start listens on addr (like "127.0.0.1:0") and serves a new simulator in
// the background, over TLS when opts.TLS is set.
func Start(addr string, opts Options) (*Server, error) {
	sim := New(opts)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fts-sim: listen %s: %w", addr, err)
	}
	s := &Server{Simulator: sim, ln: ln, done: make(chan error, 1)}
	s.srv = &http.Server{Handler: sim, ReadHeaderTimeout: 30 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	s.transport = clientTransport(opts.TLS)
	scheme := "http"
	if opts.TLS != nil {
		s.srv.TLSConfig = tlsConfig(sim.opts)
		ln = tls.NewListener(ln, s.srv.TLSConfig)
		scheme = "https"
	}
	s.URL = scheme + "://" + s.ln.Addr().String()
	go func() {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// tlsConfig asks for client certificates when ClientCAs are given and
// verifies proxy chains itself, since Go's verifier refuses certificates
// issued by an end-entity certificate.
func tlsConfig(o Options) *tls.Config {
	t := o.TLS
	cfg := &tls.Config{Certificates: []tls.Certificate{t.Cert}, MinVersion: tls.VersionTLS12}
	if t.ClientCAs == nil {
		return cfg
	}
	cfg.ClientAuth = tls.RequestClientCert
	cfg.VerifyPeerCertificate = gridcert.VerifyPeer(t.ClientCAs, time.Now)
	return cfg
}

// Close stops the server at once, dropping open connections (and so
// releasing hung requests).
func (s *Server) Close() error {
	err := s.srv.Close()
	if serr := <-s.done; err == nil {
		err = serr
	}
	s.done <- nil // make a second Close harmless
	s.transport.CloseIdleConnections()
	return err
}

// Client returns an HTTP client that trusts the server's certificate (and
// presents no client certificate).
func (s *Server) Client() *http.Client {
	return &http.Client{Transport: s.transport, Timeout: time.Minute}
}

func clientTransport(t *TLSOptions) *http.Transport {
	tr := &http.Transport{}
	if t != nil {
		pool := x509.NewCertPool()
		for _, der := range t.Cert.Certificate {
			if c, err := x509.ParseCertificate(der); err == nil {
				pool.AddCert(c)
			}
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return tr
}
