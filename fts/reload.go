package fts

import (
	"os"
	"strings"
	"sync"
	"time"
)

// Credentials live in files that are renewed while the agent runs
// (voms-proxy-init, token refreshers): both are re-read when their file
// changes.

// fileStamp identifies a version of a file.
type fileStamp struct {
	mod  int64 // modification time, ns since the epoch
	size int64
}

func stampOf(st os.FileInfo) fileStamp {
	return fileStamp{mod: st.ModTime().UnixNano(), size: st.Size()}
}

// proxySource is the proxy of a file, re-read when the file changes.
type proxySource struct {
	path string

	mu    sync.Mutex
	cur   *proxyCredential
	tried fileStamp // last version read, even if unusable
}

// newProxySource reads the proxy at path and checks it is valid now.
func newProxySource(path string, now time.Time) (*proxySource, error) {
	p, err := loadProxy(path)
	if err != nil {
		return nil, err
	}
	if err := p.checkValid(now); err != nil {
		return nil, err
	}
	return &proxySource{path: path, cur: p, tried: p.stamp}, nil
}

// current returns the proxy in use.
func (s *proxySource) current() *proxyCredential {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// refresh switches to a renewed proxy file once it reads as a valid proxy
// (a file being rewritten, or opened to others, is not used), and returns
// the proxy in use, or an error if that one is no longer valid. changed
// says whether it is a new proxy.
func (s *proxySource) refresh(now time.Time) (p *proxyCredential, changed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, err := os.Stat(s.path); err == nil && stampOf(st) != s.tried {
		s.tried = stampOf(st)
		if next, err := loadProxy(s.path); err == nil && next.checkValid(now) == nil {
			s.cur, changed = next, true
		}
	}
	return s.cur, changed, s.cur.checkValid(now)
}

// tokenFile is an OAuth2 bearer token read from a file, re-read when the
// file changes (token refreshers rewrite it in place).
type tokenFile struct {
	path string

	mu    sync.Mutex
	stamp fileStamp
	token string
}

func loadTokenFile(path string) (*tokenFile, error) {
	t := &tokenFile{path: path}
	if _, err := t.get(); err != nil {
		return nil, err
	}
	return t, nil
}

// get returns the current token, re-reading the file if it changed. While
// a changed file does not read as a token (being rewritten), the previous
// token is kept.
func (t *tokenFile) get() (string, error) {
	st, err := statPrivate("token", t.path)
	if err != nil {
		return "", err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && stampOf(st) == t.stamp {
		return t.token, nil
	}
	tok, err := readToken(t.path)
	if err != nil {
		if t.token != "" {
			return t.token, nil
		}
		return "", err
	}
	t.token, t.stamp = tok, stampOf(st)
	return tok, nil
}

func readToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", credErrorf("fts: token file: %w", err)
	}
	tok := strings.TrimSpace(string(data))
	switch {
	case tok == "":
		return "", credErrorf("fts: token file %s is empty", path)
	case strings.ContainsAny(tok, " \t\r\n"):
		return "", credErrorf("fts: token file %s must hold one token on one line", path)
	}
	return tok, nil
}
