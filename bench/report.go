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
	Machine Machine      `json:"machine"`
	Started string       `json:"started"`
	Runs    []Run        `json:"runs"`
	Growth  []Growth     `json:"growth"`
	Crowd   *CrowdSeries `json:"crowded_series,omitempty"`
}

// Machine says where the figures come from.
type Machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	Go       string `json:"go"`
}

// Growth compares the largest run of a backend with its smallest: how
// many times the drain time, the agent's CPU time and its peak RSS grew,
// against how many times the transfers did (Linear).
type Growth struct {
	Backend string  `json:"backend"`
	Small   int     `json:"small"`
	Large   int     `json:"large"`
	Ratio   float64 `json:"time_ratio"` // large time / small time
	CPU     float64 `json:"cpu_ratio"`
	RSS     float64 `json:"rss_ratio"`
	Linear  float64 `json:"linear"` // large / small
}

// maxGrowth is the most any growth may be from 10,000 to 100,000 transfers
// (ten times the transfers, and a tenth more).
const maxGrowth = 11.0

// targets are the most agent/limit may be, by backend.
var targets = map[string]float64{"couch": 1.2, "memfile": 1.5}

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
		out = append(out, Growth{Backend: b, Small: s.N, Large: l.N, Ratio: l.DrainSeconds / s.DrainSeconds,
			CPU: l.CPUSeconds / s.CPUSeconds, RSS: l.PeakRSSMiB / s.PeakRSSMiB, Linear: float64(l.N) / float64(s.N)})
	}
	return out
}

func printTable(w io.Writer, res Results) {
	fmt.Fprintf(w, "machine: %d CPUs, %s, %s\n\n", res.Machine.CPUs, res.Machine.CPUModel, res.Machine.Go)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "backend\ttransfers\tenqueue/s\tdrain s\ttransfers/s\tpasses\tRT/transfer\tclaim\tsubmit\tmonitor\trecord\tupkeep\tfiles/submit\tjobs/status\tpeak RSS MiB\tRSS MiB/10k\tagent CPU s\tsequential s\tlimit s\tagent/sequential\tagent/limit\ttarget\t")
	for _, r := range res.Runs {
		if r.Error != "" {
			continue // listed below the table
		}
		ph := r.PhaseRoundTrips
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.0f\t%d\t%.4f %s\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.0f\t%.1f\t%.0f\t%.1f\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t\n",
			r.Backend, r.N, r.EnqueuePerSecond, r.DrainSeconds, r.TransfersPerSecond, r.Passes,
			r.RoundTripsPerTransfer, r.RoundTripUnit, ph["claim"], ph["submit"], ph["monitor"], ph["record"], ph["upkeep"],
			r.FilesPerSubmit, r.JobsPerStatus, r.PeakRSSMiB, r.PeakRSSMiB*10000/float64(r.N), r.CPUSeconds, r.ReferenceSeconds, r.LimitSeconds, r.Ratio, r.LimitRatio, verdict(r))
	}
	tw.Flush()
	for _, r := range res.Runs {
		if r.Error != "" {
			fmt.Fprintf(w, "%s %d: %s\n", r.Backend, r.N, r.Error)
		}
	}
	fmt.Fprintln(w, "\nRT: state-store round trips (HTTP requests for CouchDB, fsyncs for memfile) per transfer, in total and by phase.")
	fmt.Fprintln(w, "sequential: the same revisions written with no agent logic, one write after another as the agent batches them (CouchDB: _bulk_docs; memfile: journal records and fsyncs);")
	fmt.Fprintln(w, "limit: the fastest of the references (CouchDB: also with several _bulk_docs in flight; memfile: also in fewer records and fsyncs); target: the most agent/limit may be.")
	fmt.Fprintln(w, "RSS MiB/10k: the agent's peak RSS per 10,000 transfers of the queue it drained.")
	for _, g := range res.Growth {
		fmt.Fprintf(w, "growth %s: %d -> %d transfers (%.0fx): drain time %.1fx, agent CPU %.1fx, peak RSS %.1fx (at most %.0fx: %s)\n",
			g.Backend, g.Small, g.Large, g.Linear, g.Ratio, g.CPU, g.RSS, maxGrowth, okIf(max(g.Ratio, g.CPU, g.RSS) <= maxGrowth))
		fmt.Fprintf(w, "  peak RSS at %d over %d: %.2fx, %s\n", g.Large, g.Small, g.RSS, rssVerdict(g))
	}
	for _, r := range res.Runs {
		if r.Error != "" {
			continue
		}
		fmt.Fprintf(w, "\n%s %d: FTS requests %v, each answered after %gs (-fts-latency)\n", r.Backend, r.N, r.FTSRequests, r.FTSLatency)
		if len(r.Drains) > 1 {
			fmt.Fprintf(w, "%d runs (-repeat), in the order they ran: drain s %s; agent/sequential %s; agent/limit %s; the figures are the medians of each series\n",
				len(r.Drains), numList(r.Drains), numList(r.Ratios), numList(r.LimitRatios))
		}
		printRefs(w, r.References)
		if r.Backend == "memfile" {
			fmt.Fprintf(w, "  the agent opened the store (read the file into memory) in %.2f s, before the drain\n", r.OpenSeconds)
		}
		printCalls(w, r)
	}
	if res.Crowd != nil {
		printCrowd(w, res.Crowd)
	}
}

// printRefs prints the references measured, the limit marked.
func printRefs(w io.Writer, refs []RefResult) {
	best := 0
	for i, x := range refs {
		if x.Seconds < refs[best].Seconds {
			best = i
		}
	}
	for i, x := range refs {
		mark := ""
		if i == best {
			mark = "  <- the limit"
		}
		fmt.Fprintf(w, "  reference %.2f s: %s%s\n", x.Seconds, x.Name, mark)
	}
}

// maxRSSGrowth is the most the agent's peak RSS may grow from 10,000 to
// 100,000 transfers on CouchDB: its memory follows the batch, not the
// queue. memfile keeps its store in memory by design and has no target.
const maxRSSGrowth = 1.3

// rssVerdict says whether g's growth of peak RSS meets its target.
func rssVerdict(g Growth) string {
	if g.Backend != "couch" {
		return "no target (memfile keeps its store in memory)"
	}
	return fmt.Sprintf("target at most %.1fx: %s", maxRSSGrowth, okIf(g.RSS <= maxRSSGrowth))
}

// verdict says whether run r meets its backend's target of agent/limit.
func verdict(r Run) string {
	t, ok := targets[r.Backend]
	if !ok || r.LimitSeconds == 0 {
		return "-"
	}
	return fmt.Sprintf("<= %.1f: %s", t, okIf(r.LimitRatio <= t))
}

func okIf(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
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

func numList(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.2f", r)
	}
	return strings.Join(parts, " ")
}
