package ftssim

import (
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Simulator is an FTS3 server in memory: an http.Handler. Its knobs are safe
// to call while it serves.
type Simulator struct {
	opts  Options
	start time.Time // real time at creation, for Speed
	fault *faults
	creds *delegations

	mu          sync.Mutex
	jobs        map[string]*job
	ledger      []*file // every file ever received, also of lost jobs
	nextFileID  int64
	ids         *uuid1Gen
	failureRate float64
	// destInUse holds, by dest_surl_uuid, the last file given each one
	// (with CheckDuplicates); FTS clears the column when a file ends.
	destInUse map[string]*file
}

// New returns a simulator configured by opts.
func New(opts Options) *Simulator {
	opts = opts.withDefaults()
	return &Simulator{
		opts:        opts,
		start:       time.Now(),
		jobs:        map[string]*job{},
		destInUse:   map[string]*file{},
		nextFileID:  firstFileID(opts.Seed),
		ids:         newUUID1Gen(opts.Seed),
		failureRate: opts.FailureRate,
		fault:       newFaults(),
		creds:       newDelegations(),
	}
}

// firstFileID is where file ids start: a large integer, as on a server
// that has run for years, drawn from the seed.
func firstFileID(seed int64) int64 {
	return 1_000_000_000 + int64(mix(uint64(seed), 0xf11e)%1_000_000_000)
}

// now is the simulated time.
func (s *Simulator) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now().UTC()
	}
	el := time.Since(s.start)
	return s.start.Add(time.Duration(float64(el) * s.opts.Speed)).UTC()
}

// SetHang makes the simulator hold every request without answering (until
// SetHang(false) or the client gives up), for timeout tests.
func (s *Simulator) SetHang(on bool) { s.fault.setHang(on) }

// Fail503 makes the next n requests fail with 503 and the HTML page of
// FTS's database TimeoutHandler.
func (s *Simulator) Fail503(n int) { s.fault.set503(n) }

// SetDatabaseDown makes the simulator answer every request (but GET
// /sim/files) as FTS does while its database is down: Apache's own 500
// HTML page, since the application fails before it can answer.
func (s *Simulator) SetDatabaseDown(on bool) { s.fault.setDatabaseDown(on) }

// FailDatabase makes the next n requests find the database down (see
// SetDatabaseDown).
func (s *Simulator) FailDatabase(n int) { s.fault.failDatabase(n) }

// LoseJob forgets a job, as when FTS archives or loses it: it answers 404
// afterwards. Its files stay in Files.
func (s *Simulator) LoseJob(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.jobs, id)
}

// SetFailureRate changes the probability that an attempt fails; it applies
// to attempts that end from now on.
func (s *Simulator) SetFailureRate(p float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failureRate = p
}

// ExpireDelegation makes every delegated proxy expired, so the next
// submission of an X.509 client gets 419 until it delegates again.
func (s *Simulator) ExpireDelegation() { s.creds.expireAll() }

// Files lists every file the simulator received, in submission order, with
// its current state (the content of GET /sim/files).
func (s *Simulator) Files() []SimFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, j := range s.jobs {
		s.advance(j, now)
	}
	out := make([]SimFile, len(s.ledger))
	for i, f := range s.ledger {
		out[i] = f.sim()
	}
	return out
}

// Requests returns how many requests of each kind were received: "submit",
// "status" (GET /jobs/ids), "files", "retries", "field", "list", "cancel",
// "cancel_files", "modify", "dm", "whoami", "version", "delegation" (PUT of a
// proxy), "delegation_request", "delegation_info", "delegation_delete",
// "unknown". Requests refused by Fail503, FailDatabase or authentication
// count too;
// GET /sim/files does not.
func (s *Simulator) Requests() map[string]int { return s.fault.requests() }

// handlerFunc serves an authenticated request; args are the path's
// variable parts.
type handlerFunc func(w http.ResponseWriter, r *http.Request, id *identity, args []string)

// route is a resolved request: its kind (for the counters) and handler.
type route struct {
	kind string
	h    handlerFunc
	args []string
}

// cleanPath collapses runs of slashes: the official FTS Python client
// builds every URL as endpoint + "/" + path, so it sends GET // and
// POST //jobs, which the server answers as / and /jobs.
func cleanPath(p string) string {
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	return p
}

func (s *Simulator) resolve(r *http.Request) route {
	path := cleanPath(r.URL.Path)
	p := strings.Split(strings.Trim(path, "/"), "/")
	m := r.Method
	get, del := m == http.MethodGet, m == http.MethodDelete
	switch {
	case path == "/" && get:
		return route{kind: "version", h: handleVersion}
	case len(p) == 1 && p[0] == "whoami" && get:
		return route{kind: "whoami", h: handleWhoami}
	case len(p) == 1 && p[0] == "jobs" && (m == http.MethodPost || m == http.MethodPut):
		return route{kind: "submit", h: s.handleSubmit}
	case len(p) == 1 && p[0] == "jobs" && get:
		return route{kind: "list", h: s.handleList}
	case len(p) == 2 && p[0] == "jobs" && get:
		return route{kind: "status", h: s.handleStatus, args: p[1:]}
	case len(p) == 2 && p[0] == "jobs" && del:
		return route{kind: "cancel", h: s.handleCancel, args: p[1:]}
	case len(p) == 2 && p[0] == "jobs" && m == http.MethodPost:
		return route{kind: "modify", h: s.handleModify, args: p[1:]}
	case len(p) == 3 && p[0] == "jobs" && p[2] == "files" && get:
		return route{kind: "files", h: s.handleFiles, args: p[1:2]}
	case len(p) == 3 && p[0] == "jobs" && p[2] == "dm" && get:
		return route{kind: "dm", h: s.handleDM, args: p[1:2]}
	case len(p) == 3 && p[0] == "jobs" && get:
		return route{kind: "field", h: s.handleField, args: p[1:]}
	case len(p) == 4 && p[0] == "jobs" && p[2] == "files" && del:
		return route{kind: "cancel_files", h: s.handleCancelFiles, args: []string{p[1], p[3]}}
	case len(p) == 5 && p[0] == "jobs" && p[2] == "files" && p[4] == "retries" && get:
		return route{kind: "retries", h: s.handleRetries, args: []string{p[1], p[3]}}
	case len(p) == 2 && p[0] == "delegation" && get:
		return route{kind: "delegation_info", h: ownDelegation(s.creds.handleInfo), args: p[1:]}
	case len(p) == 2 && p[0] == "delegation" && del:
		return route{kind: "delegation_delete", h: ownDelegation(s.creds.handleDelete), args: p[1:]}
	case len(p) == 3 && p[0] == "delegation" && p[2] == "request" && get:
		return route{kind: "delegation_request", h: ownDelegation(s.creds.handleRequest), args: p[1:2]}
	case len(p) == 3 && p[0] == "delegation" && p[2] == "credential" && (m == http.MethodPut || m == http.MethodPost):
		return route{kind: "delegation", h: ownDelegation(s.creds.handlePut), args: p[1:2]}
	}
	return route{kind: "unknown", h: handleUnknown}
}

func handleUnknown(w http.ResponseWriter, _ *http.Request, _ *identity, _ []string) {
	writeError(w, http.StatusNotFound, "The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again.")
}

// ServeHTTP serves the FTS3 REST API and GET /sim/files.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if cleanPath(r.URL.Path) == "/sim/files" && r.Method == http.MethodGet {
		writeJSON(w, http.StatusOK, s.Files())
		return
	}
	rt := s.resolve(r)
	a := s.fault.admit(rt.kind)

	if s.opts.Latency > 0 {
		t := time.NewTimer(s.opts.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if a.hang != nil {
		select {
		case <-a.hang:
		case <-r.Context().Done():
			return
		}
	}
	if a.fail503 {
		writeHTMLError(w, http.StatusServiceUnavailable, msg503)
		return
	}
	if a.dbDown {
		writeApache500(w)
		return
	}
	id, code, msg := authenticate(s.opts, r)
	if id == nil {
		writeHTMLError(w, code, msg)
		return
	}
	rt.h(w, r, id, rt.args)
}

// sortedJobs returns the live jobs by submission time.
func (s *Simulator) sortedJobs() []*job {
	out := make([]*job, 0, len(s.jobs))
	for _, j := range s.jobs {
		out = append(out, j)
	}
	sort.Slice(out, func(a, b int) bool {
		if !out[a].submitTime.Equal(out[b].submitTime) {
			return out[a].submitTime.Before(out[b].submitTime)
		}
		return out[a].files[0].id < out[b].files[0].id
	})
	return out
}
