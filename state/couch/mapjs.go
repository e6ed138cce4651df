package couch

import (
	_ "embed"
	"strings"
)

// microsJS is the function micros(t) that several map functions share:
// an RFC 3339 time as microseconds since the epoch, 0 for none or
// unparsable. A map function cannot import another file on every server
// CouchDB's clients use (the test server has no CommonJS views.lib), so
// the function is written into each map function that asks for it.
//
//go:embed micros.js
var microsJS string

// includeMicros is the line a map function holds where micros(t) goes.
const includeMicros = "  // include micros.js\n"

// withMicros returns the map function src with micros(t) written in at
// its include line. The result is byte for byte the function as it was
// written out before, so that a server's view index stays valid across
// the change. A map function without exactly one include line is a bug
// of this package, caught when it is loaded.
func withMicros(name, src string) string {
	if strings.Count(src, includeMicros) != 1 {
		panic("couch: " + name + " must hold exactly one line " + strings.TrimSpace(includeMicros))
	}
	return strings.Replace(src, includeMicros, microsJS, 1)
}
