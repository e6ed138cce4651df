// Package davtest serves a directory as a WebDAV storage answers gfal2's
// http plugin, for tests that run the real gfal-stat, gfal-sum and gfal-rm
// against it, as httptest.NewServer serves a handler:
//
//   - PROPFIND (Depth 0): 207 Multi-Status with getcontentlength,
//     getlastmodified and resourcetype (a collection for a directory), as
//     dCache, EOS and StoRM answer; gfal-stat asks this first;
//   - HEAD and GET: the file, with Content-Length; asked with Want-Digest
//     naming adler32, HEAD answers a Digest header "adler32=<8 hex digits>"
//     (RFC 3230) computed from the file: gfal-sum asks so, and reads no
//     data when a storage has no checksum (it exits with ENOSYS);
//   - DELETE: removes the file (204);
//   - a missing file is 404; Fail makes a path answer a status of its own
//     (403, 503), and NoDigest a storage that keeps no checksum.
package davtest

import (
	"encoding/xml"
	"fmt"
	"hash/adler32"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Server is a WebDAV storage serving Root over HTTP on loopback.
type Server struct {
	*httptest.Server
	// Root is the directory served: URL path /a/b is Root/a/b.
	Root string

	mu       sync.Mutex
	fail     map[string]int
	noDigest bool
	requests []string
}

// NewServer serves root until the test ends.
func NewServer(t testing.TB, root string) *Server {
	t.Helper()
	s := &Server{Root: root, fail: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// URLOf is the http:// URL of the file at rel under Root.
func (s *Server) URLOf(rel string) string { return s.URL + "/" + strings.TrimPrefix(rel, "/") }

// Fail makes requests for the URL path p (as URLOf's) answer status.
func (s *Server) Fail(p string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail["/"+strings.TrimPrefix(p, "/")] = status
}

// NoDigest makes the storage keep no checksums: Want-Digest is ignored.
func (s *Server) NoDigest() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noDigest = true
}

// Requests returns "METHOD path status" of every request so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// recorder keeps the status a handler wrote.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// serve answers r and records it with its status.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	s.answer(rec, r)
	s.mu.Lock()
	s.requests = append(s.requests, fmt.Sprintf("%s %s %d", r.Method, path.Clean("/"+r.URL.Path), rec.status))
	s.mu.Unlock()
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	p := path.Clean("/" + r.URL.Path)
	s.mu.Lock()
	status, noDigest := s.fail[p], s.noDigest
	s.mu.Unlock()
	if status != 0 {
		http.Error(w, http.StatusText(status), status)
		return
	}
	file := filepath.Join(s.Root, filepath.FromSlash(p))
	st, err := os.Stat(file)
	if err != nil && r.Method != http.MethodPut {
		http.Error(w, "File not found", http.StatusNotFound)
		return
	}
	switch r.Method {
	case "PROPFIND":
		propfind(w, p, st)
	case http.MethodHead, http.MethodGet:
		if st.IsDir() {
			w.WriteHeader(http.StatusOK)
			return
		}
		s.head(w, r, file, st, noDigest)
		if r.Method == http.MethodGet {
			f, err := os.Open(file)
			if err == nil {
				_, _ = io.Copy(w, f)
				f.Close()
			}
		}
	case http.MethodDelete:
		if err := os.Remove(file); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// head writes the headers of a file, with its adler32 in Digest when
// Want-Digest asks for it.
func (s *Server) head(w http.ResponseWriter, r *http.Request, file string, st os.FileInfo, noDigest bool) {
	w.Header().Set("Content-Length", fmt.Sprint(st.Size()))
	w.Header().Set("Last-Modified", st.ModTime().UTC().Format(http.TimeFormat))
	if !noDigest && strings.Contains(strings.ToLower(r.Header.Get("Want-Digest")), "adler32") {
		data, err := os.ReadFile(file)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Digest", fmt.Sprintf("adler32=%08x", adler32.Checksum(data)))
	}
	w.WriteHeader(http.StatusOK)
}

// propfind answers a Depth 0 PROPFIND of p.
func propfind(w http.ResponseWriter, p string, st os.FileInfo) {
	type prop struct {
		Length       int64  `xml:"d:getcontentlength"`
		LastModified string `xml:"d:getlastmodified"`
		Type         struct {
			Collection *struct{} `xml:"d:collection,omitempty"`
		} `xml:"d:resourcetype"`
	}
	type response struct {
		Href   string `xml:"d:href"`
		Prop   prop   `xml:"d:propstat>d:prop"`
		Status string `xml:"d:propstat>d:status"`
	}
	type multistatus struct {
		XMLName  xml.Name `xml:"d:multistatus"`
		NS       string   `xml:"xmlns:d,attr"`
		Response response `xml:"d:response"`
	}
	pr := prop{Length: st.Size(), LastModified: st.ModTime().UTC().Format(http.TimeFormat)}
	if st.IsDir() {
		pr.Type.Collection, pr.Length = &struct{}{}, 0
	}
	body, err := xml.Marshal(multistatus{NS: "DAV:", Response: response{Href: p, Prop: pr, Status: "HTTP/1.1 200 OK"}})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.WriteHeader(http.StatusMultiStatus)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}
