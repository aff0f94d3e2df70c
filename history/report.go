package history

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/llmbench/llmbench/reports"
)

// TrendOptions configure WriteTrend.
type TrendOptions struct {
	// OutDir is the directory the page is written to; links to each run's results are made
	// relative to it when the results are reachable from there ("" = absolute file: links).
	OutDir string
	// Stat reports whether a path exists (os.Stat when nil); a run whose results are gone is
	// not linked.
	Stat func(string) (os.FileInfo, error)
	// HTML are the page options (the ECharts script above all).
	HTML reports.HTMLOptions
	// Version is the llmbench version for the page footer.
	Version string
}

// WriteTrend writes the trend page of a check result: one chart per metric and configuration
// over runs with the change points marked, each run linked to its results when reachable.
func WriteTrend(w io.Writer, res *CheckResult, o TrendOptions) error {
	stat := o.Stat
	if stat == nil {
		stat = os.Stat
	}
	t := &reports.Trend{
		Title:     "llmbench history: " + strconv.Itoa(res.Runs) + " runs",
		Headline:  verdict(res),
		Good:      !res.Failed,
		Generator: "llmbench " + o.Version + " · history schema v" + strconv.Itoa(SchemaVersion()),
		Facts: [][2]string{
			{"store", res.Store},
			{"runs", strconv.Itoa(res.Runs)},
			{"method", fmt.Sprintf("E-Divisive means, permutation test: change p ≤ %s, weak p ≤ %s, ≥ %d runs each side, minimum change %s",
				fmtNum(res.Alpha), fmtNum(res.WeakAlpha), res.MinSize, fmtPct(res.MinChange))},
		},
	}
	if !res.Since.IsZero() {
		t.Facts = append(t.Facts, [2]string{"gate", "regressions since " + fmtTime(res.Since)})
	}
	links := map[string]string{}
	link := func(dir string) string {
		if l, ok := links[dir]; ok {
			return l
		}
		l := ""
		target := filepath.Join(dir, "report.html")
		if _, err := stat(target); err != nil {
			target = dir
			if _, err := stat(dir); err != nil {
				target = ""
			}
		}
		if target != "" {
			if rel, err := filepath.Rel(o.OutDir, target); err == nil && o.OutDir != "" {
				l = filepath.ToSlash(rel)
			} else {
				l = (&url.URL{Scheme: "file", Path: filepath.ToSlash(target)}).String()
			}
		}
		links[dir] = l
		return l
	}
	for _, s := range res.Series {
		ts := reports.TrendSeries{Metric: s.Metric, Unit: s.Unit, Better: s.Better, Config: s.Config}
		for _, p := range s.Points {
			tr := reports.TrendRun{ID: p.RunID, Start: fmtTime(p.Start), Value: p.Value, Link: link(p.Dir)}
			if p.Lo != nil && p.Hi != nil {
				tr.Interval, tr.Lo, tr.Hi = true, *p.Lo, *p.Hi
			}
			ts.Runs = append(ts.Runs, tr)
		}
		ts.Level = levels(s)
		for _, c := range s.Changes {
			ts.Changes = append(ts.Changes, reports.TrendChange{
				Index: c.Index, Kind: label(c), Bad: c.Fails(),
				Summary: fmt.Sprintf("%s → %s (%s), p=%s", fmtVal(c.Before.Mean, s.Unit), fmtVal(c.After.Mean, s.Unit), fmtRel(c.Relative), fmtNum(c.P)),
				Changed: diffList(c.Changed),
			})
		}
		t.Series = append(t.Series, ts)
	}
	return reports.WriteTrendHTML(w, t, o.HTML)
}

// levels is the mean of each run's segment between the reported change points.
func levels(s Series) []float64 {
	out := make([]float64, len(s.Points))
	bounds := []int{0}
	for _, c := range s.Changes {
		bounds = append(bounds, c.Index)
	}
	bounds = append(bounds, len(s.Points))
	for k := 0; k+1 < len(bounds); k++ {
		lo, hi := bounds[k], bounds[k+1]
		if hi <= lo {
			continue
		}
		sum := 0.0
		for _, p := range s.Points[lo:hi] {
			sum += p.Value
		}
		for i := lo; i < hi; i++ {
			out[i] = sum / float64(hi-lo)
		}
	}
	return out
}
