package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// Quality under load (issue 17): the quality block of a run and the paired quality of a
// comparison, in the terminal and in the HTML report. Every number comes from metrics.

// qualityCore is the pass rate with its interval.
func qualityCore(q *metrics.Quality) string {
	return fmt.Sprintf("%s pass (%s of %s graded) · %.0f%% CI %s–%s", fmtPct(q.PassRate), fmtInt(int64(q.Passed)),
		fmtInt(int64(q.Graded)), q.Confidence*100, fmtPct(q.CILow), fmtPct(q.CIHigh))
}

// gradeFailures lists failure counts in GradeReasons order ("tool 4, format 2").
func gradeFailures(m map[string]int) string {
	var parts []string
	for _, r := range metrics.GradeReasons {
		if n := m[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", r, fmtInt(int64(n))))
		}
	}
	return strings.Join(parts, ", ")
}

// judgeLine summarizes an LLM judge's verdicts and cost.
func judgeLine(j *metrics.JudgeSummary) string {
	var s string
	if j.Mode == "pairwise" {
		s = fmt.Sprintf("pairwise via %s: %d pairs · B wins %d, A wins %d, ties %d, inconsistent %d (counted for neither) · preference for B %+.1f pp, CI %+.1f to %+.1f",
			j.Model, j.Judged, j.WinsB, j.WinsA, j.Ties, j.Inconsistent, j.PreferB*100, j.PreferBLow*100, j.PreferBHigh*100)
	} else {
		s = fmt.Sprintf("rubric via %s: %d of %d pass (%s, CI %s–%s)", j.Model, j.Passed, j.Judged-j.Errors,
			fmtPct(j.PassRate), fmtPct(j.CILow), fmtPct(j.CIHigh))
	}
	if j.Errors > 0 {
		s += fmt.Sprintf(" · %d unparsed or failed", j.Errors)
	}
	return s + fmt.Sprintf(" · %d calls, %s prompt + %s completion tokens", j.Calls, fmtInt(j.PromptTokens), fmtInt(j.CompletionTokens))
}

func writeQualityTerminal(e *errWriter, q *metrics.Quality) {
	if q.Graded > 0 {
		e.field("Quality", qualityCore(q))
		if f := gradeFailures(q.Failures); f != "" {
			e.field("", "failed: "+f)
		}
	}
	for _, r := range metrics.GradeReasons {
		if ex, ok := q.Examples[r]; ok {
			e.printf("%-12s%s\n", "", clip(termSafe("e.g. "+r+": "+ex), termWidth-12))
		}
	}
	if q.Judge != nil {
		e.field("Judge", judgeLine(q.Judge))
	}
	if len(q.ByClass) > 1 {
		e.printf("\n%-18s%8s%8s%10s%17s  %s\n", "Class quality", "graded", "passed", "pass rate", "95% CI", "failures")
		for _, name := range sortedKeys(q.ByClass) {
			c := q.ByClass[name]
			e.printf("%-18s%s%s%s%s  %s\n", clip(termSafe(name), 17), col(8, fmtInt(int64(c.Graded))), col(8, fmtInt(int64(c.Passed))),
				col(10, fmtPct(c.PassRate)), col(17, fmtPct(c.CILow)+"–"+fmtPct(c.CIHigh)), gradeFailures(c.Failures))
		}
	}
}

// pairedQualityText is the comparison's paired quality line.
func pairedQualityText(q *metrics.QualityComparison) string {
	s := fmt.Sprintf("%d requests graded on both sides: %s → %s, %+.1f pp (%.0f%% paired bootstrap CI %+.1f to %+.1f pp); passed on base only %d, on candidate only %d",
		q.Paired, fmtPct(q.BaseRate), fmtPct(q.CandRate), q.Delta*100, q.Confidence*100, q.CILow*100, q.CIHigh*100, q.BaseOnly, q.CandOnly)
	if f := gradeFailures(q.BaseFailures); f != "" {
		s += " · base failed: " + f
	}
	if f := gradeFailures(q.CandFailures); f != "" {
		s += " · candidate failed: " + f
	}
	return s
}

// qualitySection is the HTML report's quality section.
func qualitySection(s *metrics.Summary, maxPoints int) (section, bool) {
	q := s.Quality
	if q == nil {
		return section{}, false
	}
	if q.Graded == 0 { // judged only
		return section{ID: "quality", Title: "Quality under load", Blocks: []block{{Para: "LLM judge: " + judgeLine(q.Judge) + "."}}}, q.Judge != nil
	}
	t := &table{Caption: "Pass rate of graded requests", Numeric: true, LastLeft: true,
		Head: []string{"class", "graded", "passed", "pass rate", fmt.Sprintf("%.0f%% CI", q.Confidence*100), "failures by reason"}}
	t.add(txt("all"), keyed("quality.graded", fmtInt(int64(q.Graded))), txt(fmtInt(int64(q.Passed))),
		keyed("quality.pass_rate", fmtPct(q.PassRate)), txt(fmtPct(q.CILow)+"–"+fmtPct(q.CIHigh)), txt(gradeFailures(q.Failures)))
	for _, name := range sortedKeys(q.ByClass) {
		c := q.ByClass[name]
		t.add(txt(name), txt(fmtInt(int64(c.Graded))), txt(fmtInt(int64(c.Passed))), txt(fmtPct(c.PassRate)),
			txt(fmtPct(c.CILow)+"–"+fmtPct(c.CIHigh)), txt(gradeFailures(c.Failures)))
	}
	blocks := []block{{Table: t}}
	if len(q.Examples) > 0 {
		ex := &table{Caption: "First failing request per reason", Numeric: false, LastLeft: true, Head: []string{"reason", "request and why"}}
		for _, r := range metrics.GradeReasons {
			if v, ok := q.Examples[r]; ok {
				ex.add(txt(r), cell{Text: v, Class: "wrap"})
			}
		}
		blocks = append(blocks, block{Table: ex})
	}
	if ts := s.TimeSeries; ts != nil && len(ts.PassRate) == len(ts.T) && len(ts.T) > 0 {
		pct := make([]float64, len(ts.PassRate))
		for i, v := range ts.PassRate {
			pct[i] = v * 100
		}
		cols := []tsCol{{"pass rate %", pct, colGreen, 0, false}, {"graded / s", perSecond(ts.Graded, ts.BucketS), colGray, 1, true}}
		idx := unionLTTB(ts.T, maxPoints, gapsAsZero(pct), perSecond(ts.Graded, ts.BucketS))
		blocks = append(blocks, block{Charts: []*chartSpec{tsChart("ts-quality", "Pass rate over time",
			"graded requests by the bucket they ended in: pass rate (left axis; no point where none ended) and graded requests per second (right axis)",
			"pass %", "graded / s", ts, idx, cols)}})
	}
	if q.Judge != nil {
		blocks = append(blocks, block{Para: "LLM judge: " + judgeLine(q.Judge) + "."})
	}
	return section{ID: "quality", Title: "Quality under load",
		Intro:  fmt.Sprintf("Each request with expect checks was graded on its own response (traces/FORMAT.md). Intervals: percentile bootstrap, %s resamples. Reasons: timeout, request_failed, empty (no answer), format (JSON that does not parse), tool (wrong tool or parameters), check (another check failed).", fmtInt(int64(q.Resamples))),
		Blocks: blocks}, true
}

// WriteQualityTerminal writes a quality block alone (llmbench grade).
func WriteQualityTerminal(w io.Writer, q *metrics.Quality) error {
	e := &errWriter{w: w}
	if q == nil {
		e.printf("no graded request\n")
		return e.err
	}
	writeQualityTerminal(e, q)
	return e.err
}

// pairedQualitySection is the comparison report's paired quality and pairwise judge.
func pairedQualitySection(c *metrics.Comparison) (section, bool) {
	q, j := c.Quality, c.Judge
	if q == nil && j == nil {
		return section{}, false
	}
	var blocks []block
	if q != nil {
		t := &table{Numeric: true, Head: []string{"measure", "value"}}
		t.add(txt("requests graded on both sides"), txt(fmtInt(int64(q.Paired))))
		t.add(txt("pass rate, base: "+c.Base.Label), txt(fmtPct(q.BaseRate)))
		t.add(txt("pass rate, cand: "+c.Cand.Label), txt(fmtPct(q.CandRate)))
		cls := ""
		switch {
		case q.CIHigh < 0:
			cls = "bad"
		case q.CILow > 0:
			cls = "good"
		}
		t.add(txt("difference (cand − base)"), cell{Text: fmt.Sprintf("%+.1f pp", q.Delta*100), Key: "quality.delta", Class: cls})
		t.add(txt(fmt.Sprintf("%.0f%% paired bootstrap CI", q.Confidence*100)), txt(fmt.Sprintf("%+.1f to %+.1f pp", q.CILow*100, q.CIHigh*100)))
		t.add(txt("passed on base only / on cand only"), txt(fmt.Sprintf("%d / %d", q.BaseOnly, q.CandOnly)))
		t.add(txt("failures, base"), txt(gradeFailures(q.BaseFailures)))
		t.add(txt("failures, cand"), txt(gradeFailures(q.CandFailures)))
		blocks = append(blocks, block{Table: t})
	}
	if j != nil {
		blocks = append(blocks, block{Para: "LLM judge: " + judgeLine(j) + "."})
	}
	return section{ID: "quality", Title: "Quality (paired)",
		Intro:  fmt.Sprintf("Per request id graded on both sides, the difference of the pass outcomes; the interval resamples the requests (%s resamples). A pairwise judge asks each pair twice with the order swapped and counts a verdict only when both orders agree.", fmtInt(int64(max(qResamples(q), 0)))),
		Blocks: blocks}, true
}

func qResamples(q *metrics.QualityComparison) int {
	if q == nil {
		return metrics.QualityResamples
	}
	return q.Resamples
}
