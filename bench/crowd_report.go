package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// printCrowd prints the crowded series: each figure on both databases,
// their ratio and its target, met or not.
func printCrowd(w io.Writer, c *CrowdSeries) {
	fmt.Fprintf(w, "\ncrowded series on %s: %d transfers of a new user drained, on an empty database and on one holding %d documents of %d other users\n",
		c.Server, c.N, c.Docs, c.Users)
	fmt.Fprintln(w, "(of every ten: seven done, two failed, one queued and not due; each with the history of its life)")
	if c.Built {
		fmt.Fprintf(w, "the crowd: written in %.1f s, its views built in %.1f s (not timed in the series)\n", c.WriteSeconds, c.IndexSeconds)
	} else if c.Error == "" || c.Empty.Drains != nil {
		fmt.Fprintln(w, "the crowd: a kept database used again")
	}
	if c.Error != "" {
		fmt.Fprintf(w, "crowded series: %s\n", c.Error)
	}
	if len(c.Empty.Drains) == 0 || len(c.Crowded.Drains) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measure\tempty\tcrowded\tcrowded/empty\ttarget\t")
	e, k := c.Empty, c.Crowded
	ratio := func(name string, a, b float64) {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t<= %.1f: %s\t\n", name, a, b, b/a, crowdRatioTarget, okIf(b/a <= crowdRatioTarget))
	}
	ratio("drain s (median)", e.DrainSeconds, k.DrainSeconds)
	ratio("idle start s (best)", e.IdleSeconds, k.IdleSeconds)
	ratio("status --user s (best)", e.StatusSeconds, k.StatusSeconds)
	fmt.Fprintf(tw, "idle start HTTP requests\t%d\t%d\t-\t<= %d: %s\t\n", e.IdleRequests, k.IdleRequests, idleRequestTarget,
		okIf(max(e.IdleRequests, k.IdleRequests) <= idleRequestTarget))
	fmt.Fprintf(tw, "status --user HTTP requests\t%d\t%d\t-\t-\t\n", e.StatusRequests, k.StatusRequests)
	fmt.Fprintf(tw, "agent peak RSS MiB (median)\t%.0f\t%.0f\t%.2f\t-\t\n", e.PeakRSSMiB, k.PeakRSSMiB, k.PeakRSSMiB/e.PeakRSSMiB)
	tw.Flush()
	fmt.Fprintf(w, "drains s, in the order they ran: empty %s; crowded %s\n", numList(e.Drains), numList(k.Drains))
	fmt.Fprintf(w, "idle starts s: empty %s; crowded %s\n", numList(e.IdleRuns), numList(k.IdleRuns))
	fmt.Fprintf(w, "status --user s: empty %s; crowded %s\n", numList(e.StatusRuns), numList(k.StatusRuns))
	if f := c.Fleet; f != nil {
		printFleetRound(w, f, c.Users)
	}
}

// printFleetRound prints the fleet round and its target: one discovery
// query for the round that starts the users with work and one for the
// round that finds nothing left (the fleet's end), and an agent started
// for each user with work, none for the others.
func printFleetRound(w io.Writer, f *FleetRound, users int) {
	met := f.Error == "" && f.Discovery <= fleetRounds && f.Agents == f.UsersWithWork
	fmt.Fprintf(w, "fleet round on the crowded database (aso run --all-users; %d of its %d users with %d due transfers each): %.2f s, "+
		"%d HTTP requests of the parent and its agents (%.1f per user with work), %d discovery queries, %d agents started\n",
		f.UsersWithWork, users, f.PerUser, f.Seconds, f.Requests, float64(f.Requests)/float64(max(1, f.UsersWithWork)), f.Discovery, f.Agents)
	fmt.Fprintf(w, "  target: one discovery query a round (%d: the round that starts them, the one that finds nothing left) and %d starts: %s\n",
		fleetRounds, f.UsersWithWork, okIf(met))
	if f.Error != "" {
		fmt.Fprintf(w, "fleet round: %s\n", f.Error)
	}
}
