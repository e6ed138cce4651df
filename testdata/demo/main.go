// Command demo prepares the offline demonstration of aso (make demo): two
// file:// sites under a directory, source files with their ADLER32
// checksums, a sites file, and a JSON-lines file of requests, some of them
// designed to fail (a missing source, a destination that already exists, a
// wrong checksum, a dependency on a failing transfer).
//
// Usage: go run ./testdata/demo DIR [N]
package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash/adler32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
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

// id is the transfer ID aso gives a request (state.TransferID).
func (r request) id() string {
	h := sha256.New()
	for _, s := range []string{r.User, r.Source, r.SourceLFN, r.Destination, r.DestinationLFN} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: demo DIR [N]")
		os.Exit(2)
	}
	dir, err := filepath.Abs(os.Args[1])
	check(err)
	n := 300
	if len(os.Args) > 2 {
		n, err = strconv.Atoi(os.Args[2])
		check(err)
	}
	rng := rand.New(rand.NewPCG(42, 7))
	srcRoot := filepath.Join(dir, source)
	dstRoot := filepath.Join(dir, dest)
	check(os.MkdirAll(dstRoot, 0o755))

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
	check(os.WriteFile(filepath.Join(dir, "sites.yaml"), []byte(sites), 0o644))

	var reqs []request
	mk := func(i int, kind string) request {
		lfn := fmt.Sprintf("/store/temp/user/%s/run1/%s_%04d.root", user, kind, i)
		out := fmt.Sprintf("/store/user/%s/run1/%s_%04d.root", user, kind, i)
		return request{User: user, Source: source, Destination: dest, SourceLFN: lfn, DestinationLFN: out, Priority: rng.IntN(3) - 1}
	}
	write := func(r *request, root, lfn string) []byte {
		data := make([]byte, 1024+rng.IntN(64*1024))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		p := filepath.Join(root, lfn)
		check(os.MkdirAll(filepath.Dir(p), 0o755))
		check(os.WriteFile(p, data, 0o644))
		return data
	}
	var good []request
	for i := 0; i < n; i++ {
		r := mk(i, "out")
		data := write(&r, srcRoot, r.SourceLFN)
		r.Size = int64(len(data))
		r.Checksums = map[string]string{"adler32": fmt.Sprintf("%08x", adler32.Checksum(data))}
		good = append(good, r)
	}
	reqs = append(reqs, good...)
	// a missing source: fails at once with "SOURCE [2] No such file or directory"
	var missing []request
	for i := 0; i < 8; i++ {
		r := mk(i, "missing")
		r.Size = 100
		missing = append(missing, r)
	}
	reqs = append(reqs, missing...)
	// a destination that already exists: fails, and the existing file is left alone
	for i := 0; i < 8; i++ {
		r := mk(i, "exists")
		data := write(&r, srcRoot, r.SourceLFN)
		r.Size = int64(len(data))
		r.Checksums = map[string]string{"adler32": fmt.Sprintf("%08x", adler32.Checksum(data))}
		write(&r, dstRoot, r.DestinationLFN)
		reqs = append(reqs, r)
	}
	// a wrong checksum: FTS verifies it and fails the transfer
	for i := 0; i < 6; i++ {
		r := mk(i, "badsum")
		data := write(&r, srcRoot, r.SourceLFN)
		r.Size = int64(len(data))
		r.Checksums = map[string]string{"adler32": fmt.Sprintf("%08x", adler32.Checksum(data)^0xff)}
		reqs = append(reqs, r)
	}
	// dependencies: on a good transfer (runs after it), on a missing one (fails)
	for i := 0; i < 10; i++ {
		r := mk(i, "dependent")
		data := write(&r, srcRoot, r.SourceLFN)
		r.Size = int64(len(data))
		r.Checksums = map[string]string{"adler32": fmt.Sprintf("%08x", adler32.Checksum(data))}
		if i%2 == 0 {
			r.DependsOn = []string{good[i].id()}
		} else {
			r.DependsOn = []string{missing[i%len(missing)].id()}
		}
		reqs = append(reqs, r)
	}
	f, err := os.Create(filepath.Join(dir, "requests.jsonl"))
	check(err)
	enc := json.NewEncoder(f)
	for _, r := range reqs {
		check(enc.Encode(r))
	}
	check(f.Close())
	fmt.Printf("demo: %d requests for user %s in %s (sites.yaml, requests.jsonl)\n", len(reqs), user, dir)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
