package fts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// maxReply bounds a reply body read into memory (a bulk status of 100 jobs
// with their files stays far below).
const maxReply = 64 << 20

// request is one REST call.
type request struct {
	method      string
	path        string // escaped, starting with "/"
	query       string // raw query, without "?"
	body        []byte
	contentType string // default application/json when body is set
	// idempotent requests are retried after any transient failure; others
	// only when the server surely did not act (503, 429, connection refused).
	idempotent bool
}

// reply is a final HTTP reply; 4xx replies are returned as replies too, so
// callers can read their bodies (a bulk status 404 carries job entries).
type reply struct {
	status int
	header http.Header
	body   []byte
}

// httpError returns the *HTTPError for a reply with an error status.
func (r *reply) httpError() *HTTPError {
	return &HTTPError{StatusCode: r.status, Message: errorMessage(r.body)}
}

// send performs rq, each attempt under Config.Timeout, retrying transient
// failures with exponential backoff for at most Config.MaxElapsed. A 5xx or
// 429 reply that is still failing at the end comes back as *HTTPError; any
// other reply is returned as is.
func (c *Client) send(ctx context.Context, rq request) (*reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.proxy != nil {
		_, renewed, err := c.proxy.refresh(c.cfg.Now())
		if err != nil {
			return nil, err
		}
		if renewed {
			c.hc.CloseIdleConnections() // new connections present the new proxy
		}
	}
	// waits from RetryInitial growing by half (to at most a minute), each
	// drawn within ±50% of that: backoff's defaults
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(c.cfg.RetryInitial), backoff.WithMaxElapsedTime(c.cfg.MaxElapsed))
	var notify backoff.Notify
	if c.cfg.OnRetry != nil {
		notify = func(err error, wait time.Duration) { c.cfg.OnRetry(rq.method, rq.path, err, wait, b.GetElapsedTime()) }
	}
	var r *reply
	var last error
	err := backoff.RetryNotify(func() error {
		var err error
		if r, err = c.attempt(ctx, rq); err == nil {
			return nil
		}
		last = err
		if ctx.Err() != nil || !retryable(err, rq.idempotent) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(b, ctx), notify)
	if err != nil && ctx.Err() != nil && last != nil && !errors.Is(last, ctx.Err()) {
		return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// retryable says whether a failed attempt may be tried again. A request
// that timed out is not: it already used its whole time, and a hung server
// would hold the caller for MaxElapsed; the caller's next pass retries.
func retryable(err error, idempotent bool) bool {
	if !IsTransient(err) || errors.Is(err, ErrTimeout) {
		return false
	}
	if idempotent {
		return true
	}
	var he *HTTPError
	if errors.As(err, &he) {
		return he.StatusCode == http.StatusServiceUnavailable || he.StatusCode == http.StatusTooManyRequests
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// attempt performs one try of rq under its own timeout.
func (c *Client) attempt(ctx context.Context, rq request) (*reply, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var body io.Reader
	if rq.body != nil {
		body = bytes.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(actx, rq.method, c.endpointURL(rq.path, rq.query), body)
	if err != nil {
		return nil, backoff.Permanent(fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Accept", "application/json")
	if rq.body != nil {
		ct := rq.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if c.token != nil {
		tok, err := c.token.get()
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, actx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	if err == nil && actx.Err() != nil {
		// A reply racing the deadline (a server giving up on a cancelled
		// request answers an empty 200) is not trusted.
		err = actx.Err()
	}
	if err != nil {
		return nil, c.transportError(ctx, actx, err)
	}
	if len(data) > maxReply {
		return nil, fmt.Errorf("reply larger than %d bytes", maxReply)
	}
	r := &reply{status: resp.StatusCode, header: resp.Header, body: data}
	if s := r.status; s >= 500 || s == http.StatusTooManyRequests {
		return nil, r.httpError()
	}
	return r, nil
}

// transportError names a failed exchange: the caller's cancellation as is,
// the attempt's own deadline as ErrTimeout, anything else as a transport
// error (without the URL, which says nothing the caller does not know).
func (c *Client) transportError(ctx, actx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if actx.Err() != nil {
		return fmt.Errorf("%w: no reply within %s", ErrTimeout, c.cfg.Timeout)
	}
	switch {
	case isHandshakeRefusal(err):
		return fmt.Errorf("%w: the server refused the TLS handshake (%w); check that the credential is valid and its CA is trusted by the server", errTransport, err)
	case isCertificateError(err):
		return fmt.Errorf("%w: cannot verify the server's certificate (%w); check the CA directory", errTransport, err)
	}
	return fmt.Errorf("%w: %w", errTransport, err)
}
