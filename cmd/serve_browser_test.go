package cmd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/asyncstageout/aso/cmd"
	"github.com/asyncstageout/aso/internal/statusview"
	"github.com/asyncstageout/aso/serve/servetest"
	"github.com/asyncstageout/aso/state"
	"github.com/asyncstageout/aso/state/couch"
	"github.com/asyncstageout/aso/state/couch/couchtest"
	"github.com/asyncstageout/aso/state/memfile"
)

// startServe runs `aso serve` on a free loopback port with args until the
// test ends, and returns its URL, read from its "listening" log line.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	return startServeEnv(t, func(string) (string, bool) { return "", false }, args...)
}

// startServeEnv is startServe with the environment lookup given.
func startServeEnv(t *testing.T, lookup func(string) (string, bool), args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- cmd.ExecuteWith(ctx, append(args, "--log-format", "json", "serve", "--listen", "127.0.0.1:0"),
			cmd.Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: pw, LookupEnv: lookup})
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("aso serve exited %d", code)
		}
	})
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		var l struct{ Msg, URL string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.URL != "" {
			go func() { _, _ = io.Copy(io.Discard, pr) }()
			return strings.TrimSuffix(l.URL, "/")
		}
		t.Log(sc.Text())
	}
	t.Fatal("aso serve ended before it listened")
	return ""
}

// browser starts a headless Chromium (Debian's chromium) for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: make test-setup installs it (Debian's chromium package)")
	}
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1600)}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	return ctx
}

// shots is where the test keeps a screenshot of each page it saw:
// $ASO_TEST_ARTIFACTS/serve, else a directory it makes and names in its
// log.
func shots(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ASO_TEST_ARTIFACTS")
	if dir != "" {
		dir = filepath.Join(dir, "serve")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	} else {
		var err error
		if dir, err = os.MkdirTemp("", "aso-serve-shots-"); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots of every page: %s", dir)
	return dir
}

func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// follow clicks the link or button sel selects and waits for the page it
// leads to, which must answer 200.
func follow(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
	if resp.Status != 200 {
		t.Fatalf("click %s: %s answered %d", sel, resp.URL, resp.Status)
	}
}

// fill sets the list form's fields: name, value, ...
func fill(t *testing.T, ctx context.Context, kv ...string) {
	t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		js := fmt.Sprintf(`document.querySelector('[name=%q]').value = %q`, kv[i], kv[i+1])
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](js)); err != nil {
			t.Fatalf("set %s: %v", kv[i], err)
		}
	}
}

// text returns the text of the element sel selects.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func number(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.ReplaceAll(text(t, ctx, sel), ",", ""))
	if err != nil {
		t.Fatalf("%s is not a number: %v", sel, err)
	}
	return n
}

// rowIDs returns the transfer IDs of the list page's rows.
func rowIDs(t *testing.T, ctx context.Context) []string {
	t.Helper()
	ids, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#transfers tr[data-id]')).map(r => r.dataset.id)`))
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func statusJSON(t *testing.T, st string, flags ...string) statusview.Status {
	t.Helper()
	var s statusview.Status
	r := aso(t, append([]string{st, "status", "--json"}, flags...)...).wantCode(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("status --json: %v", err)
	}
	return s
}

// TestServe_Browser: a person's tour of aso serve in a real Chromium, over
// a store of 10,000 transfers of five users on three links (a file store;
// and CouchDB with ASO_TEST_LARGE=1, where filling it takes a minute):
// every number of the overview, a user's page, a link's page and the
// status page is the one aso status --json gives; the failed count leads
// to the list aso list gives, page after page; the filter form selects
// what aso list selects; a transfer's page shows what aso status ID does
// and says why it is not done. A screenshot of each page is kept.
func TestServe_Browser(t *testing.T) {
	backends := []string{"memfile"}
	if os.Getenv(EnvLarge) != "" {
		backends = append(backends, "couchdb")
	}
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			st := browserWorld(t, b)
			u := startServe(t, st)
			ctx, dir := browser(t), shots(t)
			all := statusJSON(t, st, "--all-users")
			if all.Total != 10000 {
				t.Fatalf("the store holds %d transfers, want 10000", all.Total)
			}
			browseOverview(t, ctx, dir, u, all)
			browseList(t, ctx, dir, st, all)
			browseFilters(t, ctx, dir, st)
			browseTransfer(t, ctx, dir, st)
			browseUserAndLink(t, ctx, dir, u, st, all)
			if err := chromedp.Do(ctx, chromedp.Navigate(u+"/status")); err != nil {
				t.Fatal(err)
			}
			if got := number(t, ctx, "#total"); got != all.Total {
				t.Errorf("status page total %d, aso status %d", got, all.Total)
			}
			shot(t, ctx, dir, "status")
		})
	}
}

// browserWorld fills a store of backend with 10,000 transfers through the
// store's own calls and returns its --state flag.
func browserWorld(t *testing.T, backend string) string {
	t.Helper()
	ctx := context.Background()
	clk := &servetest.Clock{T: time.Now().Add(-12 * time.Hour)}
	cfg := func(user string) state.Config {
		return state.Config{Agent: state.Agent{User: user, Owner: "host:1:fill"}, Now: clk.Now}
	}
	var open func(user string) (state.Store, error)
	var flag string
	if backend == "memfile" {
		path := filepath.Join(t.TempDir(), "s.aso")
		open = func(user string) (state.Store, error) { return memfile.Open(path, cfg(user)) }
		flag = "--state=file:" + path
	} else {
		db := couchtest.DB(t)
		aso(t, "--state", db, "init").wantCode(t, 0)
		open = func(user string) (state.Store, error) { return couch.Open(ctx, couch.Options{URL: db}, cfg(user)) }
		flag = "--state=" + db
	}
	if err := servetest.Fill(ctx, open, 2000, clk); err != nil {
		t.Fatal(err)
	}
	return flag
}

func browseOverview(t *testing.T, ctx context.Context, dir, u string, all statusview.Status) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(u+"/"), chromedp.WaitVisible(chromedp.CSS("#total"))); err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, dir, "overview")
	if got := number(t, ctx, "#total"); got != all.Total {
		t.Errorf("overview total %d, aso status %d", got, all.Total)
	}
	for _, s := range state.States {
		if got := number(t, ctx, fmt.Sprintf(`#by-state a[data-state=%q]`, s)); got != all.ByState[s] {
			t.Errorf("overview %s: %d, aso status %d", s, got, all.ByState[s])
		}
	}
	for c, n := range all.ByErrorClass {
		if n > 0 {
			if got := number(t, ctx, fmt.Sprintf(`#classes tr[data-class=%q] a`, c)); got != n {
				t.Errorf("overview failed of class %s: %d, aso status %d", c, got, n)
			}
		}
	}
	for user, m := range all.ByUser {
		row := fmt.Sprintf(`#users tr[data-user=%q] td:nth-child(5)`, user)
		if got := number(t, ctx, row); got != m[state.StateFailed] {
			t.Errorf("overview: %s's failed %d, aso status %d", user, got, m[state.StateFailed])
		}
	}
}

// browseList follows the failed count to its list, and two next pages,
// against aso list.
func browseList(t *testing.T, ctx context.Context, dir, st string, all statusview.Status) {
	t.Helper()
	want := listIDs(t, st, "list", "--all-users", "--in-state", "failed")
	if len(want) != all.ByState[state.StateFailed] {
		t.Fatalf("aso list gives %d failed, aso status %d", len(want), all.ByState[state.StateFailed])
	}
	follow(t, ctx, `#by-state a[data-state="failed"]`)
	shot(t, ctx, dir, "list-failed")
	var got []string
	for page := 0; page < 3; page++ {
		ids := rowIDs(t, ctx)
		if len(ids) != 100 {
			t.Fatalf("page %d has %d rows, want 100", page+1, len(ids))
		}
		got = append(got, ids...)
		follow(t, ctx, "#next")
	}
	shot(t, ctx, dir, "list-failed-page4")
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("row %d of the pages: %s, aso list %s", i, got[i], want[i])
		}
	}
}

// browseFilters fills the filter form: failed, no_space, one link.
func browseFilters(t *testing.T, ctx context.Context, dir, st string) {
	t.Helper()
	link := servetest.Links[1][0] + "->" + servetest.Links[1][1]
	fill(t, ctx, "in-state", "failed", "error-class", "no_space", "link", link)
	follow(t, ctx, "#apply")
	shot(t, ctx, dir, "list-filtered")
	want := listIDs(t, st, "list", "--all-users", "--in-state", "failed", "--error-class", "no_space", "--link", link, "--limit", "100")
	got := rowIDs(t, ctx)
	if len(want) == 0 || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("the filtered page holds %d transfers, aso list %d (first %v vs %v)", len(got), len(want), first(got), first(want))
	}
}

func first(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

var coolOff = regexp.MustCompile(`Attempt [0-9]+ failed: TRANSFER \[110\] Connection timed out`)

// browseTransfer opens a transfer waiting to retry from the list, and
// checks its page against aso status ID --json.
func browseTransfer(t *testing.T, ctx context.Context, dir, st string) {
	t.Helper()
	fill(t, ctx, "in-state", "new", "error-class", "timeout", "link", "")
	follow(t, ctx, "#apply")
	follow(t, ctx, `#transfers tr[data-id] a`)
	shot(t, ctx, dir, "transfer")
	id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#fields td.mono').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	r := aso(t, st, "status", id, "--json").wantCode(t, 0)
	var want statusview.Transfer
	if err := json.Unmarshal([]byte(r.stdout), &want); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, "#state"); got != string(want.State) {
		t.Errorf("transfer page state %s, aso status %s", got, want.State)
	}
	if got := number(t, ctx, "#attempts"); got != want.Attempts {
		t.Errorf("transfer page attempts %d, aso status %d", got, want.Attempts)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#history tr').length - 1`))
	if err != nil {
		t.Fatal(err)
	}
	if rows != len(want.History) || rows < 4 {
		t.Errorf("transfer page history %d rows, aso status %d", rows, len(want.History))
	}
	if where := text(t, ctx, "#where"); !coolOff.MatchString(where) || !strings.Contains(where, "No agent of") {
		t.Errorf("the page does not say why it waits:\n%s", where)
	}
}

// browseUserAndLink opens bob's page and a link's page from the overview.
func browseUserAndLink(t *testing.T, ctx context.Context, dir, u, st string, all statusview.Status) {
	t.Helper()
	bob := statusJSON(t, st, "--user", "bob")
	if err := chromedp.Do(ctx, chromedp.Navigate(u+"/")); err != nil {
		t.Fatal(err)
	}
	follow(t, ctx, `#users tr[data-user="bob"] a`)
	shot(t, ctx, dir, "user-bob")
	if got := number(t, ctx, "#total"); got != bob.Total {
		t.Errorf("bob's page total %d, aso status --user bob %d", got, bob.Total)
	}
	link := servetest.Links[0][0] + "->" + servetest.Links[0][1]
	if err := chromedp.Do(ctx, chromedp.Navigate(u+"/")); err != nil {
		t.Fatal(err)
	}
	follow(t, ctx, fmt.Sprintf(`#links tr[data-link=%q] a`, link))
	shot(t, ctx, dir, "link")
	n := 0
	for _, c := range all.ByLink[link] {
		n += c
	}
	if got := number(t, ctx, "#total"); got != n {
		t.Errorf("link page total %d, aso status %d", got, n)
	}
}
