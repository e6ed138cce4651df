package fts

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkParseStatus parses a status reply of 100 jobs of 200 files, what
// the monitor reads per request when draining a large queue.
func BenchmarkParseStatus(b *testing.B) {
	type file struct {
		FileID     int64   `json:"file_id"`
		FileState  string  `json:"file_state"`
		SourceSURL string  `json:"source_surl"`
		DestSURL   string  `json:"dest_surl"`
		Reason     string  `json:"reason"`
		StartTime  string  `json:"start_time"`
		FinishTime string  `json:"finish_time"`
		Filesize   int64   `json:"filesize"`
		Throughput float64 `json:"throughput"`
		Retry      int     `json:"retry"`
		Metadata   any     `json:"file_metadata"`
	}
	type job struct {
		JobID    string `json:"job_id"`
		JobState string `json:"job_state"`
		Reason   any    `json:"reason"`
		Files    []file `json:"files"`
	}
	var jobs []job
	var ids []string
	for j := range 100 {
		id := fmt.Sprintf("0b7e9c45-77c0-5d87-b304-d6061b1a%04d", j)
		ids = append(ids, id)
		jb := job{JobID: id, JobState: "FINISHED"}
		for f := range 200 {
			jb.Files = append(jb.Files, file{FileID: int64(j*200 + f), FileState: "FINISHED",
				SourceSURL: fmt.Sprintf("davs://source.example.org:2880/store/temp/user/bench/task/out_%07d.root", f),
				DestSURL:   fmt.Sprintf("davs://home.example.org:2880/store/user/bench/task/out_%07d.root", f),
				StartTime:  "2026-11-22T09:29:49", FinishTime: "2026-11-22T09:29:50", Filesize: 2710000, Throughput: 12.5,
				Metadata: map[string]string{"aso_transfer_id": fmt.Sprintf("%064d", f)}})
		}
		jobs = append(jobs, jb)
	}
	body, err := json.Marshal(jobs)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for range b.N {
		if _, err := parseStatusReply(body, ids); err != nil {
			b.Fatal(err)
		}
	}
}
