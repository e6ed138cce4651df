package busytest_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/asyncstageout/aso/internal/busytest"
)

// TestFactor: the factor is at least 1 and at most 10 and scales
// durations by itself; ASO_TEST_SLOWNESS overrides the measurement (in a
// fresh test binary, where it is measured first).
func TestFactor(t *testing.T) {
	f := busytest.Factor()
	if f < 1 || f > 10 {
		t.Fatalf("factor %v, want 1..10", f)
	}
	if got, want := busytest.Scale(time.Second), time.Duration(float64(time.Second)*f); got != want {
		t.Errorf("Scale(1s) = %s, want %s", got, want)
	}
	t.Logf("factor %.2f", f)
}

// TestFactor_Override runs this package's tests again with the override.
func TestFactor_Override(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	c := exec.Command("go", "test", "-count=1", "-run", "^TestFactor$", "-v", ".")
	c.Env = append(c.Environ(), busytest.Env+"=3.5")
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "factor 3.50") {
		t.Fatalf("with %s=3.5: %v\n%s", busytest.Env, err, out)
	}
}
