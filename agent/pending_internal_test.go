package agent

import (
	"testing"

	"github.com/asyncstageout/aso/fts"
)

// TestCollided: the file FTS's "The submission is duplicated" names is
// found by the dest_surl_uuid in the database's message, in the forms
// MariaDB and MySQL 8 give it, also when SQLAlchemy appends the statement
// and other rows' values; a message without one names nothing.
func TestCollided(t *testing.T) {
	a, b := "davs://se.example:443/store/user/alice/a.root", "davs://se.example:443/store/user/alice/b.root"
	ua, ub := fts.DestinationUUID(a), fts.DestinationUUID(b)
	p := &pendingJob{job: job{files: []planned{{id: "A", dst: a}, {id: "B", dst: b}}}}
	for _, c := range []struct {
		msg  string
		want string
	}{
		{`The submission is duplicated (MySQLdb.IntegrityError) (1062, "Duplicate entry '` + ub + `' for key 'dest_surl_uuid'")`, "B"},
		{`The submission is duplicated (MySQLdb._exceptions.IntegrityError) (1062, "Duplicate entry '` + ua + `' for key 't_file.dest_surl_uuid'")` +
			"\n[SQL: INSERT INTO t_file (job_id, dest_surl_uuid) VALUES (%s, %s)]\n[parameters: (('j', '" + ua + "'), ('j', '" + ub + "'))]", "A"},
		{`The submission is duplicated (pymysql.err.IntegrityError) (1062, "Duplicate entry '01234567-89ab-5cde-8f01-23456789abcd' for key 'dest_surl_uuid'")`, ""},
		{"The submission is duplicated", ""},
	} {
		p.conflict = c.msg
		got := p.collided()
		if c.want == "" && len(got) != 0 || c.want != "" && (len(got) != 1 || !got[c.want]) {
			t.Errorf("%q: %v, want %q", c.msg, got, c.want)
		}
	}
}
