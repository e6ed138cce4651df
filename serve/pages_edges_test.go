package serve_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/serve"
)

// TestPages_FreeLocksAndChartAxes: the status page's run locks table shows
// no host, pid or times for a free lock (those of the run that released
// it would read as a live holder's), and the overview's charts name their
// axes.
func TestPages_FreeLocksAndChartAxes(t *testing.T) {
	b := memfileBackend(t, 20)
	u, _ := start(t, b, serve.Options{CacheTTL: time.Minute})
	code, body := get(t, nil, u+"/status")
	if code != 200 {
		t.Fatalf("/status: %d %s", code, body)
	}
	rows := regexp.MustCompile(`<tr><td>(\w+)</td><td>([^<]*)</td>(.*?)</tr>`).FindAllStringSubmatch(body, -1)
	free, held := 0, 0
	for _, r := range rows {
		switch r[2] {
		case "free":
			free++
			if strings.Contains(r[3], "fillhost") || regexp.MustCompile(`>\d{3,}<`).MatchString(r[3]) {
				t.Errorf("the free lock of %s shows its last holder: %s", r[1], r[3])
			}
		case "held":
			held++
			if !strings.Contains(r[3], "fillhost") || !strings.Contains(r[3], ">4242<") {
				t.Errorf("the held lock of %s does not show its holder: %s", r[1], r[3])
			}
		}
	}
	if free == 0 || held == 0 {
		t.Fatalf("%d free and %d held locks on the status page, want both:\n%s", free, held, body)
	}
	code, body = get(t, nil, u+"/")
	if code != 200 {
		t.Fatalf("/: %d %s", code, body)
	}
	for _, want := range []string{`>hour (UTC), each bar from its start</text>`, `>transfers per hour</text>`} {
		if n := strings.Count(body, want); n != 2 {
			t.Errorf("the overview has %d axis labels %s, want one in each of its two charts", n, want)
		}
	}
}
