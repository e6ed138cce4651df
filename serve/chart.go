package serve

import (
	"fmt"
	"github.com/asyncstageout/aso/state"
	"slices"
	"sort"
	"time"
)

// chart is a bar chart of the transfers done and failed per hour, drawn
// on the server as inline SVG: each bar a done part (below) and a failed
// part (above), with its numbers in a title a browser shows on hover.
type chart struct {
	Title          string
	Width, Height  int
	Top, Bottom    int // the plot's top and bottom y
	Bars           []bar
	Max            int
	Done, Failed   int
	Ticks          []tick
	Empty          bool
	Left, PlotWide int
	// XLabel and YLabel name the axes: what a bar's place and its height
	// are.
	XLabel, YLabel string
}

type bar struct {
	X, W                       float64
	DoneY, DoneH, FailY, FailH float64
	Label                      string
}

type tick struct {
	X     float64
	Label string
}

// Sizes of a chart, in SVG user units.
const (
	chartW, chartH = 720, 178
	chartLeft      = 56
	chartTop       = 12
	chartBottom    = 136
)

// hourChart charts hours (any links) over the window before now, one bar
// per hour.
func hourChart(hours []state.FinishedCount, now time.Time, window time.Duration) *chart {
	n := int(window / time.Hour)
	first := now.UTC().Truncate(time.Hour).Add(-time.Duration(n-1) * time.Hour)
	done, failed := make([]int, n), make([]int, n)
	for _, h := range hours {
		i := int(h.At.Sub(first) / time.Hour)
		if i < 0 || i >= n {
			continue
		}
		if h.State == state.StateDone {
			done[i] += h.Count
		} else {
			failed[i] += h.Count
		}
	}
	c := &chart{Width: chartW, Height: chartH, Top: chartTop, Bottom: chartBottom, Left: chartLeft, PlotWide: chartW - chartLeft,
		XLabel: "hour (UTC), each bar from its start", YLabel: "transfers per hour"}
	c.Title = fmt.Sprintf("Done and failed per hour, last %d hours", n)
	if window >= 48*time.Hour {
		c.Title = fmt.Sprintf("Done and failed per hour, last %d days", n/24)
	}
	for i := range n {
		c.Max = max(c.Max, done[i]+failed[i])
		c.Done += done[i]
		c.Failed += failed[i]
	}
	c.Empty = c.Max == 0
	scale := float64(chartBottom-chartTop) / float64(max(c.Max, 1))
	w := float64(c.PlotWide) / float64(n)
	for i := range n {
		at := first.Add(time.Duration(i) * time.Hour)
		b := bar{X: chartLeft + float64(i)*w, W: max(w-1, 1), DoneH: float64(done[i]) * scale, FailH: float64(failed[i]) * scale}
		b.DoneY = chartBottom - b.DoneH
		b.FailY = b.DoneY - b.FailH
		b.Label = fmt.Sprintf("%s: %d done, %d failed", at.Format("Jan 2 15:00 UTC"), done[i], failed[i])
		c.Bars = append(c.Bars, b)
		step := 6
		if n > 48 {
			step = 24
		}
		if (i % step) == 0 {
			c.Ticks = append(c.Ticks, tick{X: b.X, Label: at.Format("Jan 2 15h")})
		}
	}
	return c
}

// classOrder lists the classes of m with a count, in the order of
// state.ErrorClasses, then any other stored class by name.
func classOrder(m map[string]int) []string {
	var out, other []string
	for _, c := range state.ErrorClasses {
		if m[string(c)] > 0 {
			out = append(out, string(c))
		}
	}
	for c, n := range m {
		if n > 0 && !state.ErrorClass(c).Valid() {
			other = append(other, c)
		}
	}
	sort.Strings(other)
	return append(out, other...)
}

// classNames names every error class, for the list's form.
func classNames() []string {
	out := make([]string, 0, len(state.ErrorClasses))
	for _, c := range state.ErrorClasses {
		out = append(out, string(c))
	}
	return slices.Clip(out)
}
