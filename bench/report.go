package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
)

// Results is everything one `make bench` measured.
type Results struct {
	Machine Machine  `json:"machine"`
	Started string   `json:"started"`
	Runs    []Run    `json:"runs"`
	Growth  []Growth `json:"growth"`
}

// Machine says where the figures come from.
type Machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	Go       string `json:"go"`
}

// Growth compares the drain time of the largest run of a backend with its
// smallest.
type Growth struct {
	Backend string  `json:"backend"`
	Small   int     `json:"small"`
	Large   int     `json:"large"`
	Ratio   float64 `json:"time_ratio"` // large time / small time
	Linear  float64 `json:"linear"`     // large / small
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

func growth(runs []Run) []Growth {
	by := map[string][]Run{}
	var order []string
	for _, r := range runs {
		if r.Error != "" {
			continue
		}
		if by[r.Backend] == nil {
			order = append(order, r.Backend)
		}
		by[r.Backend] = append(by[r.Backend], r)
	}
	var out []Growth
	for _, b := range order {
		rs := by[b]
		sort.Slice(rs, func(i, j int) bool { return rs[i].N < rs[j].N })
		s, l := rs[0], rs[len(rs)-1]
		if s.N == l.N {
			continue
		}
		out = append(out, Growth{Backend: b, Small: s.N, Large: l.N, Ratio: l.DrainSeconds / s.DrainSeconds, Linear: float64(l.N) / float64(s.N)})
	}
	return out
}

func printTable(w io.Writer, res Results) {
	fmt.Fprintf(w, "machine: %d CPUs, %s, %s\n\n", res.Machine.CPUs, res.Machine.CPUModel, res.Machine.Go)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "backend\ttransfers\tenqueue/s\tdrain s\ttransfers/s\tpasses\tRT/transfer\tclaim\tsubmit\tmonitor\trecord\tupkeep\tfiles/submit\tjobs/status\tpeak RSS MiB\tagent CPU s\treference s\tagent/ref\t")
	for _, r := range res.Runs {
		if r.Error != "" {
			continue // listed below the table
		}
		ph := r.PhaseRoundTrips
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.0f\t%d\t%.4f %s\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.0f\t%.1f\t%.0f\t%.1f\t%.2f\t%.2f\t\n",
			r.Backend, r.N, r.EnqueuePerSecond, r.DrainSeconds, r.TransfersPerSecond, r.Passes,
			r.RoundTripsPerTransfer, r.RoundTripUnit, ph["claim"], ph["submit"], ph["monitor"], ph["record"], ph["upkeep"],
			r.FilesPerSubmit, r.JobsPerStatus, r.PeakRSSMiB, r.CPUSeconds, r.ReferenceSeconds, r.Ratio)
	}
	tw.Flush()
	for _, r := range res.Runs {
		if r.Error != "" {
			fmt.Fprintf(w, "%s %d: %s\n", r.Backend, r.N, r.Error)
		}
	}
	fmt.Fprintln(w, "\nRT: state-store round trips (HTTP requests for CouchDB, fsyncs for memfile) per transfer, in total and by phase.")
	fmt.Fprintln(w, "reference: the same revisions written with no agent logic (CouchDB: _bulk_docs batches; memfile: journal records and fsyncs).")
	for _, g := range res.Growth {
		fmt.Fprintf(w, "growth %s: %d -> %d transfers took %.1fx the time (linear: %.0fx)\n", g.Backend, g.Small, g.Large, g.Ratio, g.Linear)
	}
	for _, r := range res.Runs {
		if r.Error != "" {
			continue
		}
		fmt.Fprintf(w, "\n%s %d: FTS requests %v, each answered after %gs (-fts-latency); reference: %s\n", r.Backend, r.N, r.FTSRequests, r.FTSLatency, r.Reference)
		if len(r.Ratios) > 1 {
			fmt.Fprintf(w, "%d runs (-repeat), agent/ref in the order they ran: %s; the figures are the median run's\n", len(r.Ratios), ratioList(r.Ratios))
		}
		printCalls(w, r)
	}
}

// printCalls prints what each kind of state-store call cost in run r.
func printCalls(w io.Writer, r Run) {
	names := make([]string, 0, len(r.Calls))
	for name := range r.Calls {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return r.Calls[names[i]].Seconds > r.Calls[names[j]].Seconds })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  call\tphase\tcalls\titems\t%s\tseconds\t\n", r.RoundTripUnit)
	for _, name := range names {
		c := r.Calls[name]
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%.2f\t\n", name, phaseOf[name], c.Calls, c.Items, c.RoundTrips, c.Seconds)
	}
	tw.Flush()
}

func ratioList(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.2f", r)
	}
	return strings.Join(parts, " ")
}
