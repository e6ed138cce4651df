package cmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/state/couch/couchtest"
)

// runAso runs aso with args and returns its exit code, stdout and stderr.
func runAso(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code := cmd.ExecuteContext(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestInit_FileStore: init creates a file store and its directory, says
// so, and leaves an existing one as it is, saying that; it refuses a file
// that is not a store, and a store of another scheme.
func TestInit_FileStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "dir", "state.aso")
	st := "--state=file:" + path
	aso(t, st, "init").wantCode(t, 0).wantStdout(t, "created the file store "+path)
	invocation{stdin: strings.NewReader(extraRequests)}.run(t, st, "enqueue").wantCode(t, 0)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	aso(t, "--state=file://"+path, "init").wantCode(t, 0).wantStdout(t, path+" is already a file store: nothing to do")
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatal("init changed an existing store")
	}
	if n := statusOf(t, st, "--user", "alice")["total"]; n != 3.0 {
		t.Fatalf("%v transfers after a second init, want 3", n)
	}

	notes := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notes, []byte("not a store\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := aso(t, "--state=file:"+notes, "init").wantCode(t, cmd.ExitConfig); !strings.Contains(r.stderr, "not an aso state file") {
		t.Errorf("init over another file: stderr %q", r.stderr)
	}
	aso(t, "--state=ftp://host/x", "init").wantCode(t, cmd.ExitUsage)
}

func TestInitCommand(t *testing.T) {
	for _, k := range []string{"ASO_COUCHDB_CREDENTIALS", "ASO_COUCHDB_USER", "ASO_COUCHDB_PASSWORD", "ASO_CONFIG"} {
		t.Setenv(k, "")
	}
	base := couchtest.Server(t)
	t.Run("creates the database, twice", func(t *testing.T) {
		name := couchtest.NewName()
		couchtest.DropLater(t, base+name)
		u := "couchdb://" + strings.TrimPrefix(base, "http://") + name
		for i := 0; i < 2; i++ {
			code, out, errs := runAso(t, "init", "--state", u, "--log-level", "error")
			if code != 0 || !strings.Contains(out, "initialised") {
				t.Fatalf("run %d: exit %d, stdout %q, stderr %q", i+1, code, out, errs)
			}
		}
	})
	t.Run("passwords stay out of errors", func(t *testing.T) {
		const secret = "s3cret-pw"
		creds := filepath.Join(t.TempDir(), "creds")
		if err := os.WriteFile(creds, []byte("bob:"+secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("ASO_COUCHDB_CREDENTIALS", creds)
		noAuth := couchtest.WithoutAuth(base) // the file's credentials are wrong
		code, out, errs := runAso(t, "init", "--state", noAuth+couchtest.NewName())
		t.Logf("stderr: %s", errs)
		if code != cmd.ExitConfig || !strings.Contains(errs, "unauthorized") && !strings.Contains(errs, "401") && !strings.Contains(strings.ToLower(errs), "password is incorrect") {
			t.Fatalf("wrong credentials from a file: exit %d, stderr %q", code, errs)
		}
		if strings.Contains(out+errs, secret) {
			t.Fatalf("the password appears in the output: %q", out+errs)
		}
		withPass := strings.Replace(noAuth, "http://", "http://bob:"+secret+"@", 1) + couchtest.NewName()
		code, out, errs = runAso(t, "init", "--state", withPass)
		if code != cmd.ExitConfig || strings.Contains(out+errs, secret) {
			t.Fatalf("password in the URL: exit %d, output %q", code, out+errs)
		}
		if err := os.WriteFile(creds, []byte("no separator"), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := runAso(t, "init", "--state", noAuth+couchtest.NewName()); code != cmd.ExitUsage || !strings.Contains(errs, creds) {
			t.Fatalf("malformed credentials file: exit %d, stderr %q", code, errs)
		}
	})
}

// TestCommands_NodeList: init and the other commands take the
// comma-separated nodes of a cluster and go past one that refuses
// connections.
func TestCommands_NodeList(t *testing.T) {
	for _, k := range []string{"ASO_COUCHDB_CREDENTIALS", "ASO_COUCHDB_USER", "ASO_COUCHDB_PASSWORD", "ASO_CONFIG", "ASO_USER"} {
		unsetEnv(t, k) // set but empty is a value, which ASO_USER may not be
	}
	base := couchtest.Server(t)
	name := couchtest.NewName()
	couchtest.DropLater(t, base+name)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/" + name
	_ = l.Close()
	list := dead + "," + base + name
	if code, out, errs := runAso(t, "init", "--state", list, "--log-level", "error"); code != 0 || !strings.Contains(out, "initialised") {
		t.Fatalf("init: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, errs := runAso(t, "enqueue", "--state", list, "-f", requestsDir+"good.jsonl", "--log-level", "error"); code != 0 {
		t.Fatalf("enqueue: exit %d, stderr %q", code, errs)
	}
	code, out, errs := runAso(t, "status", "--state", list, "--all-users", "--json")
	var sum struct {
		Total int `json:"total"`
	}
	if err := json.Unmarshal([]byte(out), &sum); code != 0 || err != nil || sum.Total == 0 {
		t.Fatalf("status: exit %d, %d transfers (%v), stderr %q", code, sum.Total, err, errs)
	}
	if _, pass := couchtest.Auth(base); pass != "" && strings.Contains(out+errs, pass) {
		t.Fatalf("a password shows: %s %s", out, errs)
	}
}

// unsetEnv unsets k for the test and restores it after.
func unsetEnv(t *testing.T, k string) {
	t.Helper()
	t.Setenv(k, "") // records the old value for restore, and forbids t.Parallel
	if err := os.Unsetenv(k); err != nil {
		t.Fatal(err)
	}
}
