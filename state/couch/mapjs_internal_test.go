package couch

import (
	"strings"
	"testing"
)

// The map functions that share micros(t) hold it once each, written in
// where their include line was.
func TestMapFunctions_HoldMicrosOnce(t *testing.T) {
	for name, src := range map[string]string{"counts_map.js": countsMapJS, "users_map.js": usersMapJS} {
		if strings.Contains(src, strings.TrimSpace(includeMicros)) {
			t.Errorf("%s: the include line is still there", name)
		}
		if n := strings.Count(src, "function micros(t) {"); n != 1 {
			t.Errorf("%s: micros is defined %d times, want 1", name, n)
		}
		if !strings.HasPrefix(src, "function (doc) {") || !strings.HasSuffix(strings.TrimSpace(src), "}") {
			t.Errorf("%s: not a single function expression after the include", name)
		}
	}
}

// A map function without its include line, or with two, is refused when
// the package loads rather than sent to the server without micros.
func TestWithMicros_RefusesAMissingOrRepeatedInclude(t *testing.T) {
	for _, src := range []string{
		"function (doc) {\n  emit(doc._id, micros(doc.t));\n}\n",
		"function (doc) {\n" + includeMicros + includeMicros + "}\n",
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), "x_map.js") {
					t.Errorf("withMicros(%q) = no panic naming the file (%v)", src, r)
				}
			}()
			withMicros("x_map.js", src)
		}()
	}
}
