package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/adler32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asyncstageout/aso/srm"
)

// TestPrepare_AnyCount: every count of good transfers, below ten too,
// gives the good and failing requests, each dependency naming a request of
// the file, and good sources whose size and checksum match their request.
func TestPrepare_AnyCount(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 25} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			if err := run([]string{dir, fmt.Sprint(n)}, io.Discard); err != nil {
				t.Fatal(err)
			}
			reqs := readRequests(t, filepath.Join(dir, "requests.jsonl"))
			if got, want := len(reqs), n+8+8+6+10; got != want {
				t.Fatalf("%d requests, want %d", got, want)
			}
			ids := map[string]bool{}
			for _, r := range reqs {
				ids[r.id()] = true
			}
			sites, err := srm.LoadSites(filepath.Join(dir, "sites.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var deps int
			for _, r := range reqs {
				for _, d := range r.DependsOn {
					deps++
					if !ids[d] {
						t.Errorf("%s depends on %s, which is not in the file", r.SourceLFN, d)
					}
				}
				if !strings.Contains(r.SourceLFN, "/out_") {
					continue
				}
				pfn, err := sites.ResolveFor(r.Source, r.SourceLFN, "")
				if err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(strings.TrimPrefix(pfn, "file://"))
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(data)) != r.Size || fmt.Sprintf("%08x", adler32.Checksum(data)) != r.Checksums["adler32"] {
					t.Errorf("%s: size or checksum does not match its file", r.SourceLFN)
				}
			}
			if deps != 10 {
				t.Errorf("%d dependencies, want 10", deps)
			}
		})
	}
}

func TestRun_BadArguments(t *testing.T) {
	for _, args := range [][]string{nil, {"d", "-1"}, {"d", "ten"}, {"d", "1", "2"}} {
		if err := run(args, io.Discard); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}

func readRequests(t *testing.T, path string) []request {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var reqs []request
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	return reqs
}
