package reports

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llmbench/llmbench/metrics"
)

// ComparisonHeadline is the one-line verdict of a comparison, e.g.
// "REGRESSION: ttft.p95 · 2 better, 1 worse, 9 unchanged (paired, 95% CI)".
func ComparisonHeadline(c *metrics.Comparison) string {
	if c == nil {
		return "no comparison"
	}
	counts := map[string]int{}
	for _, m := range c.Metrics {
		counts[m.Verdict]++
	}
	var tail []string
	for _, v := range []string{metrics.VerdictBetter, metrics.VerdictWorse, metrics.VerdictChanged, metrics.VerdictUnchanged,
		metrics.VerdictWithheld, metrics.VerdictNotAssessable, metrics.VerdictNA} {
		if counts[v] > 0 {
			tail = append(tail, fmt.Sprintf("%d %s", counts[v], v))
		}
	}
	how := "unpaired"
	if c.Paired {
		how = "paired"
	}
	how += ", " + fmtShort(c.Confidence*100) + "% CI"
	head := "no regression"
	if c.Regressed {
		head = "REGRESSION: " + strings.Join(c.Regressions, ", ")
	}
	if c.CacheConfound != nil {
		// Issue 45: said before the verdict, whatever it is.
		head = "CONFOUNDED by the prefix cache (" + strconv.Itoa(len(c.CacheConfound.Withheld)) + " verdicts withheld) · " + head
	}
	s := head
	if len(tail) > 0 {
		s += " · " + strings.Join(tail, ", ")
	}
	s += " (" + how + ")"
	if e := c.Equivalence; e != nil && e.Mismatched > 0 {
		s += fmt.Sprintf(" · %s of %s outputs differ", fmtInt(int64(e.Mismatched)), fmtInt(int64(e.Compared)))
	}
	return s
}

// sideText describes one side: its label, runs and requests.
func sideText(s metrics.ComparisonSide) string {
	runs := "1 run"
	if s.Runs != 1 {
		runs = fmt.Sprintf("%d runs", s.Runs)
	}
	out := fmt.Sprintf("%s (%s, %s requests, %s ok)", s.Label, runs, fmtInt(int64(s.Requests)), fmtInt(int64(s.Succeeded)))
	if s.Summary != nil {
		if f := specArmFact(s.Summary.Speculative); f != "" {
			out += " · " + f // speculative.go
		}
	}
	return out
}

// unitFormats formats a comparison value by its unit; every unit of the metric registry has an
// entry (a test checks it).
var unitFormats = map[string]func(float64) string{
	"ms":       fmtMs,
	"fraction": fmtPct,
	"req/s":    fmtRate,
	"tok/s":    fmtRate,
	"index":    func(v float64) string { return fmtFixed(v, 3) },
	"tokens":   fmtPlain,
	"stalls":   fmtPlain,
}

// fmtUnit formats a value of a comparison metric in its unit.
func fmtUnit(v float64, unit string) string {
	if f, ok := unitFormats[unit]; ok {
		return f(v)
	}
	return fmtPlain(v)
}

// fmtPlain formats a count-like value: two decimals, none from 100 up.
func fmtPlain(v float64) string {
	if math.Abs(v) >= 100 {
		return fmtFixed(v, 0)
	}
	return fmtFixed(v, 2)
}

// fmtSignedUnit is fmtUnit with an explicit sign (fractions as percentage points).
func fmtSignedUnit(v float64, unit string) string {
	if unit == "fraction" {
		s := fmtFixed(v*100, 1) + " pp"
		if v >= 0 {
			s = "+" + s
		}
		return s
	}
	s := fmtUnit(v, unit)
	if v >= 0 && s != na {
		s = "+" + s
	}
	return s
}

// ciPct formats the confidence interval of a change: in percent of the base, derived from the
// absolute interval (metrics' relate), except for a fraction, whose change is a difference of
// proportions and reads in percentage points, never as a relative interval, and where the base
// is 0 (in the metric's unit).
func ciPct(m metrics.MetricDelta) string {
	if m.Verdict == metrics.VerdictNA || m.Base == 0 || m.Unit == "fraction" {
		return "[" + fmtSignedUnit(m.CILow, m.Unit) + ", " + fmtSignedUnit(m.CIHigh, m.Unit) + "]"
	}
	return "[" + fmtSignedPct(m.CILowPct/100) + ", " + fmtSignedPct(m.CIHighPct/100) + "]"
}

// stallThresholdText names the stall threshold both sides were judged by and where it came
// from (a derived one is the base side's, applied to both).
func stallThresholdText(c *metrics.Comparison) (string, bool) {
	if c.Base.Summary == nil || c.Base.Summary.Stalls.ThresholdMs <= 0 {
		return "", false
	}
	st := c.Base.Summary.Stalls
	s := "a gap between bursts above " + fmtShort(st.ThresholdMs) + " ms on either side"
	if st.ThresholdRule != "" {
		s += " (" + st.ThresholdRule + ")"
	}
	return s, true
}

// thresholdText is a stall threshold with its origin: "35.7 ms (5x median burst ITL (7.13 ms))".
func thresholdText(st metrics.Stalls) string {
	s := fmtShort(st.ThresholdMs) + " ms"
	if st.ThresholdRule != "" {
		s += " (" + st.ThresholdRule + ")"
	}
	return s
}

// verdictText is the verdict cell, naming the broken rule when regressed.
func verdictText(m metrics.MetricDelta) string {
	v := m.Verdict
	if v == metrics.VerdictRegressed {
		v = "REGRESSED"
	}
	if m.Threshold != "" {
		v += " (" + m.Threshold + mdeText(m) + ")"
	}
	return v
}

// mdeText states a gated metric's minimum detectable effect: " (MDE 4.2%)", " (MDE 1.5 pp)"
// for a fraction gated in pp (a rule in % of the base gets the MDE in %), "" when unknown.
func mdeText(m metrics.MetricDelta) string {
	switch {
	case m.Unit == "fraction" && m.MDE > 0 && !strings.HasSuffix(m.Threshold, "%"):
		return " (MDE " + fmtFixed(m.MDE*100, 1) + " pp)"
	case m.MDEPct > 0 && m.Base != 0:
		return " (MDE " + fmtFixed(m.MDEPct, 1) + "%)"
	case m.MDE > 0:
		return " (MDE " + fmtUnit(m.MDE, m.Unit) + ")"
	}
	return ""
}

func deltaPctText(m metrics.MetricDelta) string {
	if m.Base == 0 {
		return na
	}
	return fmtSignedPct(m.DeltaPct / 100)
}

// metricLabel names a metric with its unit where the name does not already say it.
func metricLabel(m metrics.MetricDelta) string {
	if m.Unit == "ms" {
		return m.Name + " (ms)"
	}
	return m.Name
}

// WriteComparisonTerminal prints the comparison as an aligned table that fits 100 columns:
// the verdict, both sides, and one row per metric with its change, confidence interval and
// verdict.
func WriteComparisonTerminal(w io.Writer, c *metrics.Comparison) error {
	if c == nil {
		return fmt.Errorf("reports: WriteComparisonTerminal: nil comparison")
	}
	e := &errWriter{w: w}
	if cc := c.CacheConfound; cc != nil {
		for _, line := range wrap(termSafe(cc.Statement), termWidth) {
			e.printf("%s\n", line)
		}
		e.printf("\n")
	}
	for _, line := range wrap(termSafe(ComparisonHeadline(c)), termWidth) {
		e.printf("%s\n", line)
	}
	e.field("base", sideText(c.Base))
	e.field("candidate", sideText(c.Cand))
	e.field("method", c.Method)
	if st, ok := stallThresholdText(c); ok {
		e.field("stalls", st)
	}
	e.printf("\n%-31s%8s%8s%10s%9s  %-20s%s\n", "metric", "base", "cand", "delta", "delta%", "CI of delta", "verdict")
	var rules []string
	for _, m := range c.Metrics {
		v := m.Verdict
		if v == metrics.VerdictRegressed {
			v = "REGRESSED"
		}
		if m.Threshold != "" {
			v += " *"
			state := "held"
			if m.Verdict == metrics.VerdictRegressed {
				state = "BROKEN"
			}
			rules = append(rules, m.Threshold+" "+state+mdeText(m))
		}
		ci := ciPct(m)
		if utf8.RuneCountInString(ci) >= 20 {
			ci += " " // a wide interval never runs into the verdict
		}
		e.printf("%-31s%s%s%s%s  %-20s%s\n", clip(termSafe(metricLabel(m)), 30), col(8, fmtUnit(m.Base, m.Unit)),
			col(8, fmtUnit(m.Cand, m.Unit)), col(10, fmtSignedUnit(m.Delta, m.Unit)), col(9, deltaPctText(m)), ci, v)
	}
	if len(rules) > 0 {
		e.printf("\n")
		e.field("* fail-on", strings.Join(rules, "; "))
	}
	if eq := c.Equivalence; eq != nil {
		e.printf("\n")
		e.field("outputs", equivalenceText(eq))
	}
	if c.Quality != nil {
		e.field("quality", pairedQualityText(c.Quality))
	}
	if c.Judge != nil {
		e.field("judge", judgeLine(c.Judge))
	}
	writeTermModelPairs(e, c) // per-request model (issue 38)
	if c.Energy != nil {
		e.field("energy", energyCompareLine(c.Energy)) // issue 39: energy.go
	}
	if len(c.ConfigDiff) > 0 {
		e.printf("\nConfiguration differences (base → candidate)\n")
		for _, d := range c.ConfigDiff {
			for i, line := range wrap(termSafe(metrics.ConfigDiffText(d)), termWidth-4) {
				if i == 0 {
					e.printf("  %s\n", line)
				} else {
					e.printf("    %s\n", line)
				}
			}
		}
	}
	writeTermWarningList(e, c.Warnings)
	return e.err
}

// writeTermWarningList prints a comparison's warnings under a heading, each wrapped and marked.
func writeTermWarningList(e *errWriter, warnings []string) {
	if len(warnings) == 0 {
		return
	}
	e.printf("\nWarnings\n")
	for _, wn := range warnings {
		for i, line := range wrap(termSafe(wn), termWidth-4) {
			if i == 0 {
				e.printf("  ! %s\n", line)
			} else {
				e.printf("    %s\n", line)
			}
		}
	}
}

func equivalenceText(eq *metrics.Equivalence) string {
	s := fmt.Sprintf("%s of %s compared requests produced different output · %s unchecked",
		fmtInt(int64(eq.Mismatched)), fmtInt(int64(eq.Compared)), fmtInt(int64(eq.Unchecked)))
	if len(eq.MismatchIDs) > 0 {
		s += " · e.g. " + strings.Join(eq.MismatchIDs, ", ")
	}
	return s
}

// WriteComparisonMarkdown writes the comparison as GitHub-flavoured Markdown for a pull-request
// comment: the verdict, both sides and the delta table with confidence intervals.
func WriteComparisonMarkdown(w io.Writer, c *metrics.Comparison) error {
	if c == nil {
		return fmt.Errorf("reports: WriteComparisonMarkdown: nil comparison")
	}
	e := &errWriter{w: w}
	mark := "✅"
	if c.Regressed {
		mark = "❌"
	}
	if cc := c.CacheConfound; cc != nil {
		mark = "⚠️"
		e.printf("> **%s**\n\n", mdEscape(cc.Statement))
	}
	e.printf("### %s llmbench compare: %s\n\n", mark, mdEscape(ComparisonHeadline(c)))
	e.printf("- **Base:** %s\n- **Candidate:** %s\n- **Method:** %s\n", mdEscape(sideText(c.Base)),
		mdEscape(sideText(c.Cand)), mdEscape(c.Method))
	if st, ok := stallThresholdText(c); ok {
		e.printf("- **Stalls:** %s\n", mdEscape(st))
	}
	if eq := c.Equivalence; eq != nil {
		e.printf("- **Outputs:** %s\n", mdEscape(equivalenceText(eq)))
	}
	if c.Energy != nil {
		e.printf("- **Energy:** %s\n", mdEscape(energyCompareLine(c.Energy))) // issue 39: energy.go
	}
	e.printf("\n")
	e.mdHeader("Metric", "base", "cand", "delta", "delta %", "CI of delta", "verdict")
	for _, m := range c.Metrics {
		v := mdEscape(verdictText(m))
		if m.Verdict == metrics.VerdictRegressed {
			v = "**" + v + "**"
		}
		e.mdRow(mdEscape(metricLabel(m)), fmtUnit(m.Base, m.Unit), fmtUnit(m.Cand, m.Unit), fmtSignedUnit(m.Delta, m.Unit),
			deltaPctText(m), ciPct(m), v)
	}
	writeMarkdownModelPairs(e, c) // per-request model (issue 38)
	if len(c.ConfigDiff) > 0 {
		e.printf("\n**Configuration differences** (base → candidate)\n\n")
		for _, d := range c.ConfigDiff {
			e.printf("- %s\n", mdEscape(metrics.ConfigDiffText(d)))
		}
	}
	if len(c.Warnings) > 0 {
		e.printf("\n**Warnings**\n\n")
		for _, wn := range c.Warnings {
			e.printf("- %s\n", mdEscape(wn))
		}
	}
	return e.err
}
