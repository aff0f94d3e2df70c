package usecase

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/llmbench/llmbench/runner"
)

// PrintSweep prints a sweep's curve as a table on w, then its capacity and why.
func PrintSweep(w io.Writer, r *runner.SweepResult) {
	unit := "req/s"
	if r.Mode == "concurrency" {
		unit = "conc."
	}
	graded := false // quality (issue 17): a pass-rate column when the trace has checks
	for _, p := range r.Points {
		graded = graded || p.Quality != nil
	}
	powered := false // energy (issue 39): a J/request column when the points read GPU power
	for _, p := range r.Points {
		powered = powered || p.JoulesPerRequest != nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	qualityHead := ""
	if graded {
		qualityHead = "quality %\t"
	}
	if powered {
		qualityHead += "J/request\t"
	}
	fmt.Fprintf(tw, "load (%s)\tachieved req/s\tout tok/s\tgoodput req/s\tgoodput %%\tTTFT p50\tTTFT p99\tTPOT p50\tTPOT p99\tfailed %%\t%s\n", unit, qualityHead)
	for _, p := range r.Points {
		mark := ""
		if p.GoodputFraction >= r.Target && !p.Saturated {
			mark = " ok"
		}
		if p.Saturated {
			mark += " saturated"
		}
		if p.Limited != "" {
			mark = " limited"
		}
		quality := ""
		switch {
		case p.Quality != nil:
			quality = fmt.Sprintf("%.1f [%.1f, %.1f]\t", 100*p.Quality.PassRate, 100*p.Quality.CILow, 100*p.Quality.CIHigh)
		case graded:
			quality = "-\t"
		}
		if powered {
			quality += energyCell(p.JoulesPerRequest)
		}
		fmt.Fprintf(tw, "%.4g\t%.2f\t%.0f\t%.2f\t%.1f%s\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t%s\n", p.Rate, p.RequestsPerS, p.OutputTokensPerS, p.GoodputPerS,
			100*p.GoodputFraction, mark, p.TTFTP50, p.TTFTP99, p.TPOTP50, p.TPOTP99, 100*p.FailedFraction, quality)
	}
	tw.Flush()
	if r.Capacity.Rate > 0 {
		atLeast := ""
		if r.CapacityLowerBound {
			atLeast = "at least " // the load above was limited by the harness, not the server
		}
		fmt.Fprintf(w, "\ncapacity: %s%.4g %s with goodput >= %.0f%% of requests within %s; latencies in ms\n", atLeast, r.Capacity.Rate, unit, 100*r.Target, r.SLO)
		if r.Capacity.Reason != "" {
			fmt.Fprintf(w, "why: %s\n", r.Capacity.Reason)
		}
	} else {
		reason := r.Capacity.Reason
		if reason == "" {
			reason = "no measured load met the target"
		}
		fmt.Fprintf(w, "\ncapacity: none found (%s); try a lower --start\n", reason)
	}
}

// energyCell is a point's J/request column: the figure, or "unknown" when its power was not
// read or not known.
func energyCell(v *float64) string {
	if v == nil {
		return "unknown\t"
	}
	return fmt.Sprintf("%.1f\t", *v)
}
