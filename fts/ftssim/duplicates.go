package ftssim

import (
	"fmt"
	"net/http"
)

// checkDuplicates is the UNIQUE key on t_file.dest_surl_uuid, which FTS
// fills (uuid5 of BASE_ID and the destination URL) for single-source files
// of the VOs in fts3.CheckDuplicates and clears when a file ends: the
// insert of j's files fails, and the whole job with it, when one of them
// writes a destination an active file writes. The message is FTS's prefix
// followed by the database's error, as the REST server sends it. Callers
// hold s.mu.
func (s *Simulator) checkDuplicates(j *job) *submitError {
	if !s.opts.CheckDuplicates {
		return nil
	}
	now := s.now()
	mine := map[string]bool{}
	for _, f := range j.files {
		if f.multiSource {
			continue // several sources: no dest_surl_uuid
		}
		key := DestinationUUID(f.destSURL)
		busy := false
		if holder := s.destInUse[key]; holder != nil && s.jobs[holder.job.id] == holder.job {
			s.advance(holder.job, now)
			busy = !isTerminal(holder.state) // an archived (lost) job holds nothing
		}
		if mine[key] || busy {
			return &submitError{http.StatusConflict, fmt.Sprintf(
				"The submission is duplicated (MySQLdb.IntegrityError) (1062, \"Duplicate entry '%s' for key 'dest_surl_uuid'\")", key)}
		}
		mine[key] = true
	}
	for _, f := range j.files {
		if !f.multiSource {
			s.destInUse[DestinationUUID(f.destSURL)] = f
		}
	}
	return nil
}
