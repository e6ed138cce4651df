package ftssim

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

func notFoundMsg(id string) string {
	return fmt.Sprintf("No job with the id \"%s\" has been found", id)
}

// forbiddenMsg is FTS's refusal to let another identity act on a job;
// action is "check", "cancel" or "modify".
func forbiddenMsg(action, id string) string {
	return fmt.Sprintf("Not enough permissions to %s the job \"%s\"", action, id)
}

// lookup returns the job advanced to now, or nil. Callers hold jt.mu.
func (jt *jobTable) lookup(id string) *job {
	j := jt.jobs[id]
	if j != nil {
		jt.eng.advance(j, jt.now())
	}
	return j
}

// handleStatus serves GET /jobs/{id} and GET /jobs/a,b,c[?files=..].
func (jt *jobTable) handleStatus(w http.ResponseWriter, r *http.Request, who *identity, args []string) {
	ids := strings.Split(args[0], ",")
	var fields []string
	if v, ok := r.URL.Query()["files"]; ok {
		fields = strings.Split(v[0], ",")
	}
	jt.mu.Lock()
	statuses := make([]map[string]any, 0, len(ids))
	errs := 0
	for _, id := range ids {
		if id == "" {
			continue
		}
		j := jt.lookup(id)
		if j == nil {
			statuses = append(statuses, errorDict(id, http.StatusNotFound, notFoundMsg(id)))
			errs++
			continue
		}
		if !who.owns(j) {
			statuses = append(statuses, errorDict(id, http.StatusForbidden, forbiddenMsg("check", id)))
			errs++
			continue
		}
		d := jobJSON(j)
		if fields != nil {
			files := make([]map[string]any, 0, len(j.files))
			for _, f := range j.files {
				files = append(files, fileSubset(f, fields))
			}
			d["files"] = files
		}
		d["http_status"] = "200 Ok"
		statuses = append(statuses, d)
	}
	jt.mu.Unlock()
	switch {
	case len(ids) == 1 && len(statuses) == 1 && errs == 1:
		writeJSON(w, entryCode(statuses[0]), statuses[0])
	case len(ids) == 1 && len(statuses) == 1:
		writeJSON(w, http.StatusOK, statuses[0])
	case errs > 0:
		writeJSON(w, http.StatusMultiStatus, statuses)
	default:
		writeJSON(w, http.StatusOK, statuses)
	}
}

// entryCode is the HTTP code of an entry's http_status ("403 Forbidden").
func entryCode(d map[string]any) int {
	st, _ := d["http_status"].(string)
	code, err := strconv.Atoi(strings.Fields(st + " 0")[0])
	if err != nil || code == 0 {
		return http.StatusOK
	}
	return code
}

// withJob runs fn under the lock on the job advanced to now, or answers
// 404, or 403 for another identity's job, as FTS's views do.
func (jt *jobTable) withJob(w http.ResponseWriter, who *identity, id string, fn func(j *job)) {
	jt.mu.Lock()
	defer jt.mu.Unlock()
	j := jt.lookup(id)
	if j == nil {
		writeError(w, http.StatusNotFound, notFoundMsg(id))
		return
	}
	if !who.owns(j) {
		writeError(w, http.StatusForbidden, forbiddenMsg("check", id))
		return
	}
	fn(j)
}

// handleDM serves GET /jobs/{id}/dm: the job's data-management operations,
// none for a transfer job.
func (jt *jobTable) handleDM(w http.ResponseWriter, _ *http.Request, who *identity, args []string) {
	jt.withJob(w, who, args[0], func(*job) { writeJSON(w, http.StatusOK, []any{}) })
}

// handleFiles serves GET /jobs/{id}/files.
func (jt *jobTable) handleFiles(w http.ResponseWriter, _ *http.Request, who *identity, args []string) {
	jt.withJob(w, who, args[0], func(j *job) {
		out := make([]map[string]any, len(j.files))
		for i, f := range j.files {
			out[i] = fileJSON(f)
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// handleRetries serves GET /jobs/{id}/files/{fid}/retries.
func (jt *jobTable) handleRetries(w http.ResponseWriter, _ *http.Request, who *identity, args []string) {
	jt.withJob(w, who, args[0], func(j *job) {
		fid, _ := strconv.ParseInt(args[1], 10, 64)
		for _, f := range j.files {
			if f.id == fid {
				out := make([]map[string]any, len(f.retryRows))
				for i, row := range f.retryRows {
					out[i] = retryJSON(f, row)
				}
				writeJSON(w, http.StatusOK, out)
				return
			}
		}
		writeError(w, http.StatusNotFound, fmt.Sprintf("No file with the id \"%s\" has been found", args[1]))
	})
}

// handleField serves GET /jobs/{id}/{field}: the bare value of one field.
func (jt *jobTable) handleField(w http.ResponseWriter, _ *http.Request, who *identity, args []string) {
	jt.withJob(w, who, args[0], func(j *job) {
		v, ok := jobJSON(j)[args[1]]
		if !ok {
			writeError(w, http.StatusNotFound, "No such field")
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
}

// handleList serves GET /jobs: the user's VO's jobs, unfinished ones unless
// state_in is given.
func (jt *jobTable) handleList(w http.ResponseWriter, r *http.Request, id *identity, _ []string) {
	q := r.URL.Query()
	limit := -1
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err == nil && (n < 0 || n > 500) {
			writeError(w, http.StatusBadRequest, "The limit must be positive and less or equal than 500")
			return
		}
		if err == nil {
			limit = n
		}
	}
	var states map[string]bool
	if v := q.Get("state_in"); v != "" {
		states = map[string]bool{}
		for _, st := range strings.Split(v, ",") {
			states[st] = true
		}
	}
	jt.mu.Lock()
	out := []map[string]any{}
	now := jt.now()
	for _, j := range jt.sortedJobs() {
		jt.eng.advance(j, now)
		if (states == nil && isJobTerminal(j.state)) || (states != nil && !states[j.state]) {
			continue
		}
		if !id.owns(j) || (q.Get("dlg_id") != "" && j.credID != q.Get("dlg_id")) {
			continue
		}
		out = append(out, jobJSON(j))
	}
	jt.mu.Unlock()
	if limit >= 0 {
		// FTS then lists the newest first.
		slices.Reverse(out)
		out = out[:min(limit, len(out))]
	}
	writeJSON(w, http.StatusOK, out)
}

// handleCancel serves DELETE /jobs/{ids}.
func (jt *jobTable) handleCancel(w http.ResponseWriter, _ *http.Request, who *identity, args []string) {
	ids := strings.Split(args[0], ",")
	jt.mu.Lock()
	now := jt.now()
	responses := jt.modifyJobs(who, "cancel", ids, func(j *job) {
		reason := reasonUserCancel
		j.state, j.canceled, j.reason, j.finished = stateCanceled, true, &reason, &now
		for _, f := range j.files {
			if !isFileActive(f.state) {
				continue
			}
			if f.running() {
				at := now
				f.cancelAt = &at // its url-copy still has to die
			} else {
				f.finishTime = &now
			}
			f.state, f.reason, f.reasonSet = stateCanceled, reasonUserCancel, true
		}
	})
	jt.mu.Unlock()
	multistatus(w, responses, len(ids) > 1)
}

// modifyJobs applies change to each active job of ids and returns FTS's
// per-job replies: the job with "200 Ok", the job with "304 Not Modified"
// when it is terminal, a 404 error entry, or a 403 one for another
// identity's job (left untouched). Callers hold jt.mu.
func (jt *jobTable) modifyJobs(who *identity, action string, ids []string, change func(j *job)) []map[string]any {
	var responses []map[string]any
	for _, id := range ids {
		if id == "" {
			continue
		}
		j := jt.lookup(id)
		switch {
		case j == nil:
			responses = append(responses, errorDict(id, http.StatusNotFound, notFoundMsg(id)))
		case !who.owns(j):
			responses = append(responses, errorDict(id, http.StatusForbidden, forbiddenMsg(action, id)))
		case isJobTerminal(j.state):
			d := jobJSON(j)
			d["http_status"], d["http_message"] = "304 Not Modified", "The job is in a terminal state"
			responses = append(responses, d)
		default:
			change(j)
			d := jobJSON(j)
			d["http_status"], d["http_message"] = "200 Ok", nil
			responses = append(responses, d)
		}
	}
	return responses
}

// multistatus replies like FTS's _multistatus: with several ids a list, 207
// when it holds an error entry; with one id the entry alone, with its own
// status when it is an error.
func multistatus(w http.ResponseWriter, responses []map[string]any, multi bool) {
	if multi {
		code := http.StatusOK
		for _, d := range responses {
			if _, isJob := d["job_state"]; !isJob && !strings.HasPrefix(d["http_status"].(string), "2") {
				code = http.StatusMultiStatus
			}
		}
		writeJSON(w, code, responses)
		return
	}
	if len(responses) == 0 {
		writeError(w, http.StatusNotFound, notFoundMsg(""))
		return
	}
	single := responses[0]
	if st := single["http_status"].(string); st != "200 Ok" && st != "304 Not Modified" {
		writeJSON(w, entryCode(single), single)
		return
	}
	writeJSON(w, http.StatusOK, single)
}

// handleCancelFiles serves DELETE /jobs/{id}/files/{fids}.
func (jt *jobTable) handleCancelFiles(w http.ResponseWriter, _ *http.Request, who *identity, args []string) {
	jt.withJob(w, who, args[0], func(j *job) { jt.cancelFiles(w, j, args[1]) })
}

func (jt *jobTable) cancelFiles(w http.ResponseWriter, j *job, fids string) {
	if j.jobType != "N" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Multihop or reuse jobs must be cancelled at once (%s)", j.jobType))
		return
	}
	now := jt.now()
	var changed []string
	for _, sid := range strings.Split(fids, ",") {
		fid, err := strconv.ParseInt(sid, 10, 64)
		var f *file
		for _, c := range j.files {
			if err == nil && c.id == fid {
				f = c
			}
		}
		switch {
		case f == nil:
			changed = append(changed, "File does not belong to the job")
		case !isFileActive(f.state):
			changed = append(changed, f.state)
		default:
			f.state, f.finishTime = stateCanceled, &now
			changed = append(changed, stateCanceled)
		}
	}
	active := false
	for _, f := range j.files {
		active = active || isFileActive(f.state)
	}
	if !active && !isJobTerminal(j.state) {
		j.state, j.canceled, j.finished = stateCanceled, true, &now
	}
	if len(changed) > 1 {
		writeJSON(w, http.StatusOK, changed)
		return
	}
	writeJSON(w, http.StatusOK, changed[0])
}

// handleModify serves POST /jobs/{ids} with {"params":{"priority":N}}.
func (jt *jobTable) handleModify(w http.ResponseWriter, r *http.Request, who *identity, args []string) {
	body, serr := readSubmission(r)
	if serr != nil {
		writeError(w, serr.code, serr.msg)
		return
	}
	prio := 0
	if params, ok := body["params"].(map[string]any); ok {
		if v, given := params["priority"]; given {
			n, perr := pyInt("priority", v)
			if perr != nil {
				writeError(w, http.StatusBadRequest, "Invalid priority value")
				return
			}
			prio = n
		}
	}
	ids := strings.Split(args[0], ",")
	jt.mu.Lock()
	responses := jt.modifyJobs(who, "modify", ids, func(j *job) {
		if prio != 0 {
			j.priority = min(max(prio, 1), 5)
		}
	})
	jt.mu.Unlock()
	multistatus(w, responses, len(ids) > 1)
}
