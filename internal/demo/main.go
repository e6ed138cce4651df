// Command demo prepares the offline demonstration of aso (make demo): two
// file:// sites under a directory, source files with their ADLER32
// checksums, a sites file, and a JSON-lines file of requests, some of them
// designed to fail (a missing source, a destination that already exists, a
// wrong checksum, a dependency on a failing transfer).
//
// Usage: go run ./internal/demo DIR [N]
//
// N (default 300) is the number of good transfers; any N from 0 up works.
package main

import (
	"encoding/json"
	"fmt"
	"hash/adler32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/asyncstageout/aso/state"
)

const (
	user   = "demo"
	source = "T2_XX_DemoSource"
	dest   = "T1_XX_DemoHome"
)

type request struct {
	User           string            `json:"user"`
	Source         string            `json:"source"`
	Destination    string            `json:"destination"`
	SourceLFN      string            `json:"source_lfn"`
	DestinationLFN string            `json:"destination_lfn"`
	Size           int64             `json:"size"`
	Checksums      map[string]string `json:"checksums,omitempty"`
	Priority       int               `json:"priority,omitempty"`
	DependsOn      []string          `json:"depends_on,omitempty"`
}

// id is the transfer ID aso gives a request.
func (r request) id() string {
	return state.TransferID(r.User, r.Source, r.SourceLFN, r.Destination, r.DestinationLFN)
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// run parses the arguments and prepares the demonstration.
func run(args []string, out io.Writer) error {
	if len(args) < 1 || len(args) > 2 {
		return fmt.Errorf("usage: demo DIR [N]")
	}
	n := 300
	if len(args) == 2 {
		var err error
		if n, err = strconv.Atoi(args[1]); err != nil || n < 0 {
			return fmt.Errorf("number of transfers %q: want a whole number, 0 or more", args[1])
		}
	}
	dir, err := filepath.Abs(args[0])
	if err != nil {
		return err
	}
	reqs, err := prepare(dir, n)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "demo: %d requests for user %s in %s (sites.yaml, requests.jsonl)\n", len(reqs), user, dir)
	return err
}

// generator writes the demonstration's files under two site roots.
type generator struct {
	rng              *rand.Rand
	srcRoot, dstRoot string
}

// request returns the i-th request of a kind, without its file.
func (g *generator) request(i int, kind string) request {
	lfn := fmt.Sprintf("/store/temp/user/%s/run1/%s_%04d.root", user, kind, i)
	out := fmt.Sprintf("/store/user/%s/run1/%s_%04d.root", user, kind, i)
	return request{User: user, Source: source, Destination: dest, SourceLFN: lfn, DestinationLFN: out, Priority: g.rng.IntN(3) - 1}
}

// write writes random bytes at lfn under root and returns them.
func (g *generator) write(root, lfn string) ([]byte, error) {
	data := make([]byte, 1024+g.rng.IntN(64*1024))
	for i := range data {
		data[i] = byte(g.rng.Uint32())
	}
	p := filepath.Join(root, lfn)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	return data, os.WriteFile(p, data, 0o644)
}

// withSource returns the i-th request of a kind with its source file
// written; badSum gives it a wrong checksum, exists puts a file at its
// destination too.
func (g *generator) withSource(i int, kind string, badSum, exists bool) (request, error) {
	r := g.request(i, kind)
	data, err := g.write(g.srcRoot, r.SourceLFN)
	if err != nil {
		return r, err
	}
	sum := adler32.Checksum(data)
	if badSum {
		sum ^= 0xff
	}
	r.Size = int64(len(data))
	r.Checksums = map[string]string{"adler32": fmt.Sprintf("%08x", sum)}
	if exists {
		_, err = g.write(g.dstRoot, r.DestinationLFN)
	}
	return r, err
}

// prepare writes the sites file, the source files and the requests of n
// good transfers and of the failing ones under dir, and returns the
// requests.
func prepare(dir string, n int) ([]request, error) {
	g := &generator{rng: rand.New(rand.NewPCG(42, 7)), srcRoot: filepath.Join(dir, source), dstRoot: filepath.Join(dir, dest)}
	if err := os.MkdirAll(g.dstRoot, 0o755); err != nil {
		return nil, err
	}
	if err := writeSites(dir, g.srcRoot, g.dstRoot); err != nil {
		return nil, err
	}
	var reqs, good, missing []request
	add := func(r request, err error) error {
		reqs = append(reqs, r)
		return err
	}
	for i := 0; i < n; i++ {
		r, err := g.withSource(i, "out", false, false)
		if err != nil {
			return nil, err
		}
		good = append(good, r)
	}
	reqs = append(reqs, good...)
	// a missing source: fails at once with "SOURCE [2] No such file or directory"
	for i := 0; i < 8; i++ {
		r := g.request(i, "missing")
		r.Size = 100
		missing = append(missing, r)
	}
	reqs = append(reqs, missing...)
	for i := 0; i < 8; i++ {
		// a destination that already exists: fails, and the existing file is left alone
		if err := add(g.withSource(i, "exists", false, true)); err != nil {
			return nil, err
		}
	}
	for i := 0; i < 6; i++ {
		// a wrong checksum: FTS verifies it and fails the transfer
		if err := add(g.withSource(i, "badsum", true, false)); err != nil {
			return nil, err
		}
	}
	// dependencies: on a good transfer (runs after it), on a missing one
	// (fails); with no good transfer, all on missing ones
	for i := 0; i < 10; i++ {
		r, err := g.withSource(i, "dependent", false, false)
		if err != nil {
			return nil, err
		}
		if on := missing[i%len(missing)]; i%2 == 0 && len(good) > 0 {
			r.DependsOn = []string{good[i%len(good)].id()}
		} else {
			r.DependsOn = []string{on.id()}
		}
		reqs = append(reqs, r)
	}
	return reqs, writeRequests(filepath.Join(dir, "requests.jsonl"), reqs)
}

func writeSites(dir, srcRoot, dstRoot string) error {
	sites := fmt.Sprintf(`# Two local sites for the aso demonstration.
%s:
  protocol: file
  rules:
    - path-match: /store/(.*)
      result: file://%s/store/$1
%s:
  protocol: file
  rules:
    - path-match: /store/(.*)
      result: file://%s/store/$1
`, source, srcRoot, dest, dstRoot)
	return os.WriteFile(filepath.Join(dir, "sites.yaml"), []byte(sites), 0o644)
}

func writeRequests(path string, reqs []request) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, r := range reqs {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
