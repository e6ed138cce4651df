package ftssim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxBody bounds a submission's size.
const maxBody = 64 << 20

// submitter serves submissions: it reads a job as FTS's REST server does,
// checks the user's delegation, and stores the job in the table.
type submitter struct {
	opts  Options
	jobs  *jobTable
	creds *delegations
}

// handleSubmit serves POST|PUT /jobs.
func (sb *submitter) handleSubmit(w http.ResponseWriter, r *http.Request, id *identity, _ []string) {
	body, serr := readSubmission(r)
	if serr != nil {
		writeError(w, serr.code, serr.msg)
		return
	}
	if id.method == methodCert && sb.opts.RequireDelegation {
		if msg := sb.creds.check(id); msg != "" {
			writeError(w, 419, msg)
			return
		}
	}
	sb.jobs.mu.Lock()
	j, serr := sb.build(body, id)
	if serr == nil {
		serr = sb.jobs.insert(j)
	}
	sb.jobs.mu.Unlock()
	if serr != nil {
		writeError(w, serr.code, serr.msg)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"job_id": j.id})
}

// readSubmission decodes the body as FTS's get_input_as_dict does.
func readSubmission(r *http.Request) (map[string]any, *submitError) {
	ct := r.Header.Get("Content-Type")
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return nil, badRequest("Could not read the request: %v", err)
	}
	switch {
	case ct == "application/json, application/x-www-form-urlencoded":
		unq, err := url.QueryUnescape(string(raw))
		if err != nil {
			return nil, badRequest("Badly formatted JSON request")
		}
		raw = []byte(unq)
	case strings.HasPrefix(ct, "application/json") || r.Method == http.MethodPut:
	case strings.HasPrefix(ct, "application/x-www-form-urlencoded"):
		vals, err := url.ParseQuery(string(raw))
		if err != nil {
			return nil, badRequest("Badly formatted form request: %v", err)
		}
		m := map[string]any{}
		for k, v := range vals {
			m[k] = v[0]
		}
		return m, nil
	default:
		return nil, badRequest("Expecting application/json or application/x-www-form-urlencoded")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, badRequest("Badly formatted JSON request")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badRequest("Expecting a dictionary")
	}
	return m, nil
}

// defaultParams are FTS's DEFAULT_PARAMS.
func defaultParams() map[string]any {
	return map[string]any{
		"bring_online": json.Number("-1"), "verify_checksum": false, "copy_pin_lifetime": json.Number("-1"),
		"gridftp": "", "job_metadata": nil, "overwrite": false, "reuse": nil, "multihop": false,
		"source_spacetoken": "", "spacetoken": "", "retry": json.Number("0"), "retry_delay": json.Number("0"),
		"priority": json.Number("3"), "max_time_in_queue": json.Number("0"), "s3alternate": false,
	}
}

// build turns a submission into a job, validating it as FTS's JobBuilder.
// Callers hold sb.jobs.mu.
func (sb *submitter) build(body map[string]any, id *identity) (*job, *submitError) {
	params := defaultParams()
	if p, ok := body["params"]; ok && p != nil {
		pm, ok := p.(map[string]any)
		if !ok {
			return nil, typeError("'params' must be an object, not '%s'", pyType(p))
		}
		for k, v := range pm {
			if v == nil {
				if _, hasDefault := params[k]; hasDefault {
					continue
				}
			}
			params[k] = v
		}
	}
	jm := metadataValue(params["job_metadata"])
	switch t := jm.(type) {
	case nil:
		jm = map[string]any{"auth_method": id.method}
	case map[string]any:
		t["auth_method"] = id.method
	default:
		return nil, typeError("'job_metadata' must be an object or a string, not '%s'", pyType(jm))
	}
	if _, ok := body["delete"]; ok && body["delete"] != nil {
		return nil, &submitError{http.StatusMethodNotAllowed, "Deletion jobs are no longer supported by FTS"}
	}
	files, ok := body["files"]
	if !ok || files == nil {
		return nil, badRequest("No transfers operations specified")
	}
	now := sb.jobs.now()
	j := &job{vo: id.vo, userDN: id.dn, credID: id.dlgID, submitTime: now, metadata: jm, state: stateSubmitted}
	if params["id_generator"] == "deterministic" {
		sid, ok := params["sid"]
		if !ok || sid == nil {
			return nil, badRequest("Need sid for deterministic job id generation")
		}
		j.sid = fmt.Sprint(sid)
		j.id = DeterministicJobID(id.vo, j.sid)
	} else {
		if sid, ok := params["sid"]; ok && sid != nil {
			j.sid = fmt.Sprint(sid)
		}
		j.id = newJobID()
	}
	if serr := sb.jobParams(j, params, now); serr != nil {
		return nil, serr
	}
	if serr := sb.unmanagedTokens(j, params); serr != nil {
		return nil, serr
	}
	list, ok := files.([]any)
	if !ok {
		return nil, typeError("'files' must be a list, not '%s'", pyType(files))
	}
	for i, entry := range list {
		if serr := sb.addFiles(j, params, entry, i); serr != nil {
			return nil, serr
		}
	}
	if len(j.files) == 0 {
		return nil, badRequest("No valid pairs available")
	}
	if serr := sb.finishBuild(j, params); serr != nil {
		return nil, serr
	}
	return j, tokenTapeCheck(id, params)
}

// tokenTapeCheck refuses tape requests with token authentication, as FTS
// does after building the job.
func tokenTapeCheck(id *identity, p map[string]any) *submitError {
	if id.method != methodOAuth {
		return nil
	}
	tape := func(k string) bool {
		n, ok := p[k].(json.Number)
		v, err := n.Int64()
		return ok && err == nil && v > 0
	}
	if tape("archive_timeout") {
		return badRequest("Requests to archive to tape using token authentication are not supported")
	}
	if tape("bring_online") {
		return badRequest("Requests to retrieve from tape using token authentication are not supported")
	}
	return nil
}

// jobParams reads the job-level parameters.
func (sb *submitter) jobParams(j *job, p map[string]any, now time.Time) *submitError {
	var serr *submitError
	if j.retry, serr = pyInt("retry", p["retry"]); serr != nil {
		return serr
	}
	if j.retryDelay, serr = pyInt("retry_delay", p["retry_delay"]); serr != nil {
		return serr
	}
	prio, serr := pyInt("priority", p["priority"])
	if serr != nil {
		return serr
	}
	j.priority = min(max(prio, 1), 5)
	if secs, ok := secondsFromValue(p["max_time_in_queue"]); ok {
		exp := now.Unix() + secs
		j.expiry = &exp
	}
	j.bringOnline, j.copyPinLifetime = safeInt(p["bring_online"]), safeInt(p["copy_pin_lifetime"])
	j.archiveTimeout = -1 // FTS's value when none is given
	if v, ok := p["archive_timeout"]; ok && v != nil {
		j.archiveTimeout = safeInt(v)
	}
	j.staging = j.bringOnline > 0 || j.copyPinLifetime > 0
	if j.staging {
		j.state = stateStaging
	}
	j.spaceToken, _ = p["spacetoken"].(string)
	if v, ok := p["destination_spacetoken"].(string); ok {
		j.spaceToken = v
	}
	j.sourceSpaceToken, _ = p["source_spacetoken"].(string)
	j.dstFileReport = safeFlag(p["dst_file_report"])
	if v, ok := p["target_qos"].(string); ok {
		j.targetQos = &v
	}
	j.internalParams = internalJobParams(p)
	j.jobType = "N"
	switch {
	case truthy(p["multihop"]):
		j.jobType = "H"
	case safeFlag(p["reuse"]):
		j.jobType = "Y"
	}
	return sb.overwriteFlag(j, p)
}

func internalJobParams(p map[string]any) *string {
	var list []string
	for _, k := range []struct{ key, name string }{{"nostreams", "nostreams"}, {"timeout", "timeout"}, {"buffer_size", "buffersize"}} {
		if truthy(p[k.key]) {
			list = append(list, fmt.Sprintf("%s:%d", k.name, safeInt(p[k.key])))
		}
	}
	for _, k := range []struct{ key, name string }{{"strict_copy", "strict"}, {"disable_cleanup", "disable-cleanup"}} {
		if truthy(p[k.key]) {
			list = append(list, k.name)
		}
	}
	if truthy(p["ipv4"]) {
		list = append(list, "ipv4")
	} else if truthy(p["ipv6"]) {
		list = append(list, "ipv6")
	}
	if truthy(p["s3alternate"]) {
		list = append(list, "s3alternate")
	}
	if len(list) == 0 {
		return nil
	}
	v := strings.Join(list, ",")
	return &v
}

// overwriteFlag is FTS's _validate_overwrite_flag.
func (sb *submitter) overwriteFlag(j *job, p map[string]any) *submitError {
	ow, owr, disk, hop := p["overwrite"], p["overwrite_on_retry"], p["overwrite_when_only_on_disk"], p["overwrite_hop"]
	n := 0
	for _, v := range []any{ow, owr, disk, hop} {
		if safeFlag(v) {
			n++
		}
	}
	if n > 1 && !(n == 2 && truthy(hop) && truthy(disk)) {
		return badRequest("Incompatible overwrite flags used at the same time")
	}
	if truthy(disk) && j.archiveTimeout <= 0 {
		return badRequest("'overwrite-when-only-on-disk' requires 'archive-timeout' to be set")
	}
	switch {
	case truthy(ow):
		j.overwrite = "Y"
	case truthy(owr):
		j.overwrite = "R"
	case truthy(hop) && truthy(disk):
		j.overwrite = "Q"
	case truthy(hop):
		j.overwrite = "M"
	case truthy(disk):
		j.overwrite = "D"
	}
	if (j.overwrite == "M" || j.overwrite == "Q") && j.jobType != "H" {
		return badRequest("'overwrite-hop' requires multihop job submission")
	}
	return nil
}

// addFiles adds the |sources| x |destinations| rows of one files[] entry.
func (sb *submitter) addFiles(j *job, p map[string]any, entry any, index int) *submitError {
	fd, ok := entry.(map[string]any)
	if !ok {
		return typeError("a 'files' entry must be an object, not '%s'", pyType(entry))
	}
	for _, k := range []string{"sources", "destinations"} {
		if _, ok := fd[k]; !ok {
			return keyError(k)
		}
	}
	srcs, serr := stringList("sources", fd["sources"])
	if serr != nil {
		return serr
	}
	dsts, serr := stringList("destinations", fd["destinations"])
	if serr != nil {
		return serr
	}
	state := j.entryState()
	if len(srcs) > 1 || truthy(p["multihop"]) {
		state = stateNotUsed
	}
	size := int64(0)
	if v, ok := fd["filesize"]; ok && v != nil {
		n, ok := v.(json.Number)
		f, err := n.Float64()
		if !ok || err != nil {
			return valueError("could not convert filesize to float: '%v'", v)
		}
		size = int64(f)
	}
	checksum, _ := fd["checksum"].(string)
	activity, _ := fd["activity"].(string)
	if activity == "" {
		activity = "default"
	}
	strategy, _ := fd["selection_strategy"].(string)
	if strategy == "" {
		strategy = "auto"
	}
	srcToks, dstToks, serr := fileTokens(fd, srcs, dsts)
	if serr != nil {
		return serr
	}
	tag, serr := scitag(fd["scitag"])
	if serr != nil {
		return serr
	}
	for si, src := range srcs {
		su, serr := validateURL(src, sb.opts)
		if serr != nil {
			return serr
		}
		for di, dst := range dsts {
			du, serr := validateURL(dst, sb.opts)
			if serr != nil {
				return serr
			}
			f := &file{
				index: index, job: j, state: state,
				sourceSURL: su.String(), destSURL: du.String(),
				sourceSE: storageElement(su), destSE: storageElement(du),
				userFilesize: size, checksum: checksum, activity: activity,
				selectionStrategy: strategy, queuedAt: j.submitTime, multiSource: len(srcs) > 1,
			}
			f.scitag = tag
			if srcToks != nil {
				f.srcToken, f.dstToken = srcToks[si], dstToks[di]
			}
			if md, ok := fd["metadata"]; ok && md != nil {
				f.metadata = metadataValue(md)
			}
			j.files = append(j.files, f)
		}
	}
	return nil
}

// finishBuild applies the whole-job rules: checksum mode, source and
// destination SE, replica and hop selection.
func (sb *submitter) finishBuild(j *job, p map[string]any) *submitError {
	hasChecksum := false
	for _, f := range j.files {
		if f.checksum != "" {
			hasChecksum = true
		} else {
			f.checksum = "ADLER32"
		}
	}
	switch v := p["verify_checksum"].(type) {
	case bool:
		switch {
		case !v && hasChecksum:
			j.verifyChecksum = "t"
		case !v:
			j.verifyChecksum = "n"
		default:
			j.verifyChecksum = "b"
		}
	case string:
		if v == "" {
			return typeError("'verify_checksum' must not be empty")
		}
		j.verifyChecksum = v[:1]
	default:
		return typeError("'%s' object is not subscriptable (verify_checksum)", pyType(v))
	}
	first, last := j.files[0], j.files[len(j.files)-1]
	src, dst := first.sourceSE, first.destSE
	if j.jobType == "H" {
		dst = last.destSE
	} else {
		for _, f := range j.files {
			if f.sourceSE != src {
				src = ""
			}
			if f.destSE != dst {
				dst = ""
			}
		}
	}
	if src != "" {
		j.sourceSE = &src
	}
	if dst != "" {
		j.destSE = &dst
	}
	unique := map[int]bool{}
	for _, f := range j.files {
		unique[f.index] = true
	}
	if len(unique) != len(j.files) {
		if j.jobType == "H" || j.jobType == "Y" {
			return badRequest("Can not request multiple replica job together with multihop or session reuse at the same time")
		}
		if len(unique) > 1 {
			return badRequest("Multiple replica jobs must only have one unique file")
		}
		j.jobType = "R"
	}
	if j.jobType == "Y" && (j.sourceSE == nil || j.destSE == nil) {
		return badRequest("Reuse jobs must only contain transfers for the same source ad destination storage")
	}
	if j.jobType == "R" || j.jobType == "H" {
		first.state = j.entryState()
	}
	for _, f := range j.files {
		f.initialState = f.state
	}
	return nil
}

// unmanagedTokens applies params.unmanaged_tokens.
func (sb *submitter) unmanagedTokens(j *job, p map[string]any) *submitError {
	j.unmanagedTokens = safeFlag(p["unmanaged_tokens"])
	if j.unmanagedTokens && sb.opts.RefuseUnmanagedTokens {
		return badRequest("Unmanaged tokens are not allowed!")
	}
	return nil
}
