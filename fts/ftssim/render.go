package ftssim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"time"
)

// ftsTime formats a time as FTS does: naive UTC, seconds, no zone.
const ftsTime = "2006-01-02T15:04:05"

func timeOrNull(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Format(ftsTime)
}

func strOrNull(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// jobJSON is the job as FTS serialises its ORM object (model/job.py).
func jobJSON(j *job) map[string]any {
	var expiry any
	if j.expiry != nil {
		expiry = *j.expiry
	}
	return map[string]any{
		"job_id":                 j.id,
		"source_se":              strOrNull(j.sourceSE),
		"dest_se":                strOrNull(j.destSE),
		"job_state":              j.state,
		"job_type":               j.jobType,
		"cancel_job":             j.canceled,
		"submit_host":            "fts-sim.example.org",
		"user_dn":                j.userDN,
		"cred_id":                j.credID,
		"vo_name":                j.vo,
		"reason":                 strOrNull(j.reason),
		"submit_time":            timeOrNull(&j.submitTime),
		"priority":               j.priority,
		"max_time_in_queue":      expiry,
		"destination_spacetoken": j.spaceToken,
		"internal_job_params":    strOrNull(j.internalParams),
		"dst_file_report":        j.dstFileReport,
		"overwrite_flag":         j.overwrite == "Y",
		"job_finished":           timeOrNull(j.finished),
		"source_spacetoken":      j.sourceSpaceToken,
		"copy_pin_lifetime":      j.copyPinLifetime,
		"verify_checksum":        j.verifyChecksum,
		"bring_online":           j.bringOnline,
		"archive_timeout":        j.archiveTimeout,
		"target_qos":             strOrNull(j.targetQos),
		"job_metadata":           j.metadata,
		"retry":                  j.retry,
		"retry_delay":            j.retryDelay,
	}
}

// fileFields renders each attribute of a file as FTS serialises it
// (model/file.py). A status query names the few it wants (?files=...), so
// each is computed only when asked for.
var fileFields = map[string]func(f *file) any{
	"file_id":        func(f *file) any { return f.id },
	"hashed_id":      func(f *file) any { return f.hashedID },
	"file_index":     func(f *file) any { return f.index },
	"job_id":         func(f *file) any { return f.job.id },
	"dest_surl_uuid": func(*file) any { return nil },
	"vo_name":        func(f *file) any { return f.job.vo },
	"source_se":      func(f *file) any { return f.sourceSE },
	"dest_se":        func(f *file) any { return f.destSE },
	"priority":       func(f *file) any { return f.job.priority },
	"file_state":     func(f *file) any { return f.state },
	"transfer_host":  func(f *file) any { return strOrNull(f.host) },
	"source_surl":    func(f *file) any { return f.sourceSURL },
	"dest_surl":      func(f *file) any { return f.destSURL },
	"staging_host":   func(*file) any { return nil },
	"reason": func(f *file) any {
		if f.reasonSet {
			return f.reason
		}
		return nil
	},
	"recoverable": func(f *file) any {
		if f.recoverable != nil {
			return *f.recoverable
		}
		return nil
	},
	"filesize":             func(f *file) any { return afterTransfer(f, f.filesize) },
	"checksum":             func(f *file) any { return f.checksum },
	"finish_time":          func(f *file) any { return timeOrNull(f.finishTime) },
	"start_time":           func(f *file) any { return timeOrNull(f.startTime) },
	"archive_start_time":   func(*file) any { return nil },
	"archive_finish_time":  func(*file) any { return nil },
	"internal_file_params": func(*file) any { return nil },
	"pid": func(f *file) any {
		if f.startTime != nil {
			return 10000 + f.id%50000
		}
		return nil
	},
	"tx_duration":        func(f *file) any { return afterTransfer(f, f.txDuration) },
	"throughput":         func(f *file) any { return afterTransfer(f, f.throughput) },
	"scitag":             func(f *file) any { return f.scitag },
	"src_token_id":       func(f *file) any { return tokenID(f.srcToken) },
	"dst_token_id":       func(f *file) any { return tokenID(f.dstToken) },
	"file_state_initial": func(f *file) any { return f.initialState },
	"retry":              func(f *file) any { return f.retry },
	"user_filesize":      func(f *file) any { return f.userFilesize },
	"file_metadata":      func(f *file) any { return f.metadata },
	"staging_start":      func(f *file) any { return timeOrNull(f.stagingStart) },
	"staging_finished":   func(f *file) any { return timeOrNull(f.stagingFinished) },
	"selection_strategy": func(f *file) any { return f.selectionStrategy },
	"bringonline_token":  func(*file) any { return nil },
	"log_file": func(f *file) any {
		if f.startTime != nil {
			return fmt.Sprintf("/var/log/fts3/transfers/%s/%d.log", f.startTime.UTC().Format("2006-01-02"), f.id)
		}
		return nil
	},
	"log_debug": func(*file) any { return nil },
	"activity":  func(f *file) any { return f.activity },
}

// afterTransfer is v once an attempt of the file has ended, null before
// (FTS leaves filesize, throughput and tx_duration NULL until url-copy
// reports).
func afterTransfer[T any](f *file, v T) any {
	if f.finishTime == nil && f.retry == 0 {
		return nil
	}
	return v
}

// fileJSON is the file as FTS serialises it, every attribute.
func fileJSON(f *file) map[string]any {
	m := make(map[string]any, len(fileFields))
	for k, field := range fileFields {
		m[k] = field(f)
	}
	return m
}

// fileSubset is the file with only the named attributes (unknown names are
// left out, as FTS does).
func fileSubset(f *file, names []string) map[string]any {
	m := make(map[string]any, len(names))
	for _, k := range names {
		if field, ok := fileFields[k]; ok {
			m[k] = field(f)
		}
	}
	return m
}

// retryJSON is one row of GET /jobs/{id}/files/{fid}/retries.
func retryJSON(f *file, r retryRow) map[string]any {
	return map[string]any{
		"file_id":       f.id,
		"attempt":       r.attempt,
		"datetime":      r.at.UTC().Format(ftsTime),
		"reason":        r.reason,
		"transfer_host": r.host,
		"log_file":      fmt.Sprintf("/var/log/fts3/transfers/%s/%d.%d.log", r.at.UTC().Format("2006-01-02"), f.id, r.attempt),
	}
}

// errorDict is the per-job error entry of bulk replies and single-id 404s.
func errorDict(id string, code int, msg string) map[string]any {
	return map[string]any{
		"job_id":       id,
		"http_status":  fmt.Sprintf("%d %s", code, statusName(code)),
		"http_message": msg,
	}
}

// statusName is werkzeug's name of an HTTP status code.
func statusName(code int) string {
	switch code {
	case http.StatusOK:
		return "Ok"
	case 419:
		return "Authentication Timeout"
	}
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "Unknown Error"
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeBody(w, code, "application/json", buf.Bytes())
}

// writeBody writes a reply. net/http has no reason phrase for 419, so that
// status line, "419 Authentication Timeout" at a real server, is written on
// the hijacked connection, which is then closed.
func writeBody(w http.ResponseWriter, code int, contentType string, body []byte) {
	if http.StatusText(code) == "" {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, rw, err := hj.Hijack(); err == nil {
				defer conn.Close()
				fmt.Fprintf(rw, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
					code, statusName(code), contentType, len(body))
				_, _ = rw.Write(body)
				_ = rw.Flush()
				return
			}
		}
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// writeError writes a view error as FTS does: {"status":"<code> <Name>","message":..}.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"status": fmt.Sprintf("%d %s", code, statusName(code)), "message": msg})
}

// writeHTMLError writes a middleware error as a werkzeug HTML page.
func writeHTMLError(w http.ResponseWriter, code int, msg string) {
	name := statusName(code)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, "<!doctype html>\n<html lang=en>\n<title>%d %s</title>\n<h1>%s</h1>\n<p>%s</p>\n", code, name, name, html.EscapeString(msg))
}

// apache500 is the page Apache serves when the application behind it fails,
// as FTS's does while its database is down.
const apache500 = `<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">
<html><head>
<title>500 Internal Server Error</title>
</head><body>
<h1>Internal Server Error</h1>
<p>The server encountered an internal error or
misconfiguration and was unable to complete
your request.</p>
<p>Please contact the server administrator at 
 root@localhost to inform them of the time this error occurred,
 and the actions you performed just before this error.</p>
<p>More information about this error may be available
in the server error log.</p>
</body></html>
`

// writeApache500 answers with Apache's 500 page.
func writeApache500(w http.ResponseWriter) {
	writeBody(w, http.StatusInternalServerError, "text/html; charset=iso-8859-1", []byte(apache500))
}

// msg503 is werkzeug's ServiceUnavailable description.
const msg503 = "The server is temporarily unable to service your request due to maintenance downtime or capacity problems. Please try again later."
