package ftssim

import (
	"net/http"
	"strings"
	"time"
)

// Simulator is an FTS3 server in memory: an http.Handler. Its knobs are safe
// to call while it serves.
//
// It routes each request, after the faults a test injected (faults), to
// the type that owns what the request is about: the job table (status,
// listing, cancel, modify), the submitter (new jobs) or the delegations.
type Simulator struct {
	opts  Options
	fault *faults
	creds *delegations
	jobs  *jobTable
	sub   *submitter
}

// New returns a simulator configured by opts.
func New(opts Options) *Simulator {
	opts = opts.withDefaults()
	s := &Simulator{opts: opts, fault: newFaults(), creds: newDelegations(), jobs: newJobTable(opts)}
	s.sub = &submitter{opts: opts, jobs: s.jobs, creds: s.creds}
	return s
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
func (s *Simulator) LoseJob(id string) { s.jobs.lose(id) }

// SetFailureRate changes the probability that an attempt fails; it applies
// to attempts that end from now on.
func (s *Simulator) SetFailureRate(p float64) { s.jobs.setFailureRate(p) }

// ExpireDelegation makes every delegated proxy expired, so the next
// submission of an X.509 client gets 419 until it delegates again.
func (s *Simulator) ExpireDelegation() { s.creds.expireAll() }

// Files lists every file the simulator received, in submission order, with
// its current state (the content of GET /sim/files).
func (s *Simulator) Files() []SimFile { return s.jobs.files() }

// Requests returns how many requests of each kind were received: "submit",
// "status" (GET /jobs/ids), "files", "retries", "field", "list", "cancel",
// "cancel_files", "modify", "dm", "whoami", "version", "delegation" (PUT of a
// proxy), "delegation_request", "delegation_info", "delegation_delete",
// "unknown". Requests refused by Fail503, FailDatabase or authentication
// count too;
// GET /sim/files does not.
func (s *Simulator) Requests() map[string]int { return s.fault.requests() }

// Arrival returns a channel closed when the next request of kind (as
// Requests names them) comes after the call: a test waits on it for the
// moment a client sends its submission or status query.
func (s *Simulator) Arrival(kind string) <-chan struct{} { return s.fault.arrival(kind) }

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
		return route{kind: "submit", h: s.sub.handleSubmit}
	case len(p) == 1 && p[0] == "jobs" && get:
		return route{kind: "list", h: s.jobs.handleList}
	case len(p) == 2 && p[0] == "jobs" && get:
		return route{kind: "status", h: s.jobs.handleStatus, args: p[1:]}
	case len(p) == 2 && p[0] == "jobs" && del:
		return route{kind: "cancel", h: s.jobs.handleCancel, args: p[1:]}
	case len(p) == 2 && p[0] == "jobs" && m == http.MethodPost:
		return route{kind: "modify", h: s.jobs.handleModify, args: p[1:]}
	case len(p) == 3 && p[0] == "jobs" && p[2] == "files" && get:
		return route{kind: "files", h: s.jobs.handleFiles, args: p[1:2]}
	case len(p) == 3 && p[0] == "jobs" && p[2] == "dm" && get:
		return route{kind: "dm", h: s.jobs.handleDM, args: p[1:2]}
	case len(p) == 3 && p[0] == "jobs" && get:
		return route{kind: "field", h: s.jobs.handleField, args: p[1:]}
	case len(p) == 4 && p[0] == "jobs" && p[2] == "files" && del:
		return route{kind: "cancel_files", h: s.jobs.handleCancelFiles, args: []string{p[1], p[3]}}
	case len(p) == 5 && p[0] == "jobs" && p[2] == "files" && p[4] == "retries" && get:
		return route{kind: "retries", h: s.jobs.handleRetries, args: []string{p[1], p[3]}}
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
