package cmd_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// roleEnv is an installation with a credentials file per role: the
// server's admin, and users of aso's roles with fresh names, which `aso init
// --users` creates.
type roleEnv struct {
	env   map[string]string
	names map[string]string // role -> user name
	state string            // --state, without credentials
	dir   string
}

func newRoleEnv(t *testing.T) *roleEnv {
	t.Helper()
	base := couchtest.Server(t)
	db := base + couchtest.NewName()
	couchtest.DropLater(t, db)
	r := &roleEnv{env: map[string]string{"ASO_CONFIG": ""}, names: map[string]string{}, state: couchtest.WithoutAuth(db), dir: t.TempDir()}
	admin, pass := couchtest.Auth(base)
	r.creds(t, "admin", admin, pass)
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	for _, role := range []string{"agent", "producer", "operator", "reader"} {
		p := make([]byte, 9)
		_, _ = rand.Read(p)
		r.names[role] = "test-lp-" + role + "-" + hex.EncodeToString(suffix)
		r.creds(t, role, r.names[role], hex.EncodeToString(p))
	}
	return r
}

// creds writes the credentials file of role and configures it.
func (r *roleEnv) creds(t *testing.T, role, name, pass string) {
	t.Helper()
	file := filepath.Join(r.dir, role+".creds")
	if err := os.WriteFile(file, []byte(name+":"+pass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.env["ASO_COUCHDB_CREDENTIALS_"+strings.ToUpper(role)] = file
}

func (r *roleEnv) run(t *testing.T, args ...string) result {
	t.Helper()
	return invocation{env: r.env}.run(t, append(args, "--state", r.state, "--log-level", "error")...)
}

// TestCommands_LeastPrivilege: aso init --users makes the users of the role
// credentials configured (once: a second run changes nothing); each
// command then works with its own role's credentials, aso status says who
// they are; a command whose credentials lack its role stops with exit 78
// before it does anything, saying which credentials, their roles and the
// role it needs.
func TestCommands_LeastPrivilege(t *testing.T) {
	r := newRoleEnv(t)
	res := r.run(t, "init", "--users")
	if res.code != 0 || strings.Count(res.stdout, ": created\n") != 4 || !strings.Contains(res.stdout, "user "+r.names["agent"]+" (aso-agent): created") {
		t.Fatalf("init --users: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	if res = r.run(t, "init", "--users"); res.code != 0 || strings.Count(res.stdout, ": unchanged\n") != 4 {
		t.Fatalf("init --users again: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	if res = r.run(t, "enqueue", "-f", requestsDir+"good.jsonl"); res.code != 0 {
		t.Fatalf("enqueue as aso-producer: exit %d, stderr %q", res.code, res.stderr)
	}
	res = r.run(t, "status", "--all-users", "--json")
	var st struct {
		Total      int `json:"total"`
		Credential struct {
			Name   string   `json:"name"`
			Roles  []string `json:"roles"`
			Source string   `json:"source"`
		} `json:"credential"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &st); res.code != 0 || err != nil || st.Total != 4 ||
		st.Credential.Name != r.names["reader"] || strings.Join(st.Credential.Roles, ",") != "aso-reader" ||
		!strings.HasPrefix(st.Credential.Source, "couchdb-credentials-reader (") {
		t.Fatalf("status --json as aso-reader: exit %d, %+v (%v), stderr %q", res.code, st, err, res.stderr)
	}
	res = r.run(t, "status", "--all-users")
	if want := `CouchDB credentials: user "` + r.names["reader"] + `" (roles aso-reader), from couchdb-credentials-reader`; !strings.Contains(res.stdout, want) {
		t.Fatalf("status: stdout %q, want %q", res.stdout, want)
	}
	if res = r.run(t, "kill", "--all", "--user", "alice"); res.code != 0 {
		t.Fatalf("kill as aso-operator: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}

	// the reader's credentials where the operator's belong
	wrong := &roleEnv{env: map[string]string{}, state: r.state}
	for k, v := range r.env {
		wrong.env[k] = v
	}
	wrong.env["ASO_COUCHDB_CREDENTIALS_OPERATOR"] = r.env["ASO_COUCHDB_CREDENTIALS_READER"]
	res = wrong.run(t, "purge", "--older-than", "1ns", "--all-users")
	if res.code != cmd.ExitConfig || !strings.Contains(res.stderr, "aso purge needs the role aso-operator") ||
		!strings.Contains(res.stderr, `user "`+r.names["reader"]+`" (roles aso-reader)`) || !strings.Contains(res.stderr, "couchdb-credentials-operator") {
		t.Fatalf("purge with a reader's credentials: exit %d, stderr %q; want 78 naming the role needed", res.code, res.stderr)
	}
	if res = r.run(t, "status", "--all-users", "--json"); !strings.Contains(res.stdout, `"killed": 3`) {
		t.Fatalf("the refused purge removed transfers: %s", res.stdout)
	}
	// and where the agent's belong: the run stops before it takes the lock
	wrong.env["ASO_COUCHDB_CREDENTIALS_AGENT"] = r.env["ASO_COUCHDB_CREDENTIALS_READER"]
	sites, _, _ := localSites(t, 1)
	res = wrong.run(t, "run", "--user", "bob", "--sites", sites, "--fts", "local", "--progress", "never")
	if res.code != cmd.ExitConfig || !strings.Contains(res.stderr, "aso run needs the role aso-agent") {
		t.Fatalf("run with a reader's credentials: exit %d, stderr %q; want 78 naming the role needed", res.code, res.stderr)
	}
	if res = r.run(t, "status", "--all-users", "--json"); !strings.Contains(res.stdout, `"locks": []`) || !strings.Contains(res.stdout, `"new": 1`) {
		t.Fatalf("the refused run touched the database: %s", res.stdout)
	}
	if res = r.run(t, "purge", "--older-than", "1ns", "--all-users"); res.code != 0 {
		t.Fatalf("purge as aso-operator: exit %d, stderr %q", res.code, res.stderr)
	}
	if res = r.run(t, "status", "--all-users", "--json"); !strings.Contains(res.stdout, `"total": 1,`) {
		t.Fatalf("after the operator's purge, want the one live transfer left: %s", res.stdout)
	}
}

// TestCommands_CredentialsFileMode: a credentials file that group or others
// may read is refused (exit 78, saying how to fix it), its content never
// shown.
func TestCommands_CredentialsFileMode(t *testing.T) {
	r := newRoleEnv(t)
	file := r.env["ASO_COUCHDB_CREDENTIALS_READER"]
	if err := os.Chmod(file, 0o640); err != nil {
		t.Fatal(err)
	}
	secret, _ := os.ReadFile(file)
	res := r.run(t, "status", "--all-users")
	if res.code != cmd.ExitConfig || !strings.Contains(res.stderr, "chmod 600 "+file) || strings.Contains(res.stderr, strings.TrimSpace(string(secret))) {
		t.Fatalf("group-readable credentials: exit %d, stderr %q", res.code, res.stderr)
	}
}

// roleCredentials writes a credentials file for the test server's user of
// each role (couchtest.RoleUser) and returns the environment that names
// them (ASO_COUCHDB_CREDENTIALS_AGENT, ...).
func roleCredentials(t *testing.T, roles ...string) map[string]string {
	t.Helper()
	env := map[string]string{"ASO_CONFIG": ""}
	for _, role := range roles {
		name, pass := couchtest.RoleUser(t, role)
		file := filepath.Join(t.TempDir(), role+".creds")
		if err := os.WriteFile(file, []byte(name+":"+pass+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		env["ASO_COUCHDB_CREDENTIALS_"+strings.ToUpper(strings.TrimPrefix(role, "aso-"))] = file
	}
	return env
}

// TestVerify_Roles: aso verify writes as aso-operator (or aso-agent); a
// reader's credentials in their place stop it (78) before it reads
// anything, and a reader may run --dry-run.
func TestVerify_Roles(t *testing.T) {
	r := newRoleEnv(t)
	if res := r.run(t, "init", "--users"); res.code != 0 {
		t.Fatalf("init --users: exit %d, stderr %q", res.code, res.stderr)
	}
	if res := r.run(t, "verify", "--all-users", "--progress", "never"); res.code != 0 || !strings.Contains(res.stdout, "0 checked") {
		t.Fatalf("verify as aso-operator: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	reader := &roleEnv{env: map[string]string{"ASO_CONFIG": "", "ASO_COUCHDB_CREDENTIALS_READER": r.env["ASO_COUCHDB_CREDENTIALS_READER"]}, state: r.state}
	for _, k := range []string{"ASO_COUCHDB_CREDENTIALS_OPERATOR", "ASO_COUCHDB_CREDENTIALS_AGENT"} {
		reader.env[k] = r.env["ASO_COUCHDB_CREDENTIALS_READER"]
	}
	res := reader.run(t, "verify", "--all-users", "--progress", "never")
	if res.code != cmd.ExitConfig || !strings.Contains(res.stderr, "aso verify needs the role aso-operator or aso-agent") {
		t.Fatalf("verify with a reader's credentials: exit %d, stderr %q; want 78 naming the roles needed", res.code, res.stderr)
	}
	if res := reader.run(t, "verify", "--dry-run", "--all-users", "--progress", "never"); res.code != 0 {
		t.Fatalf("verify --dry-run as aso-reader: exit %d, stderr %q", res.code, res.stderr)
	}
}
