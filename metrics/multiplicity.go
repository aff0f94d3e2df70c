package metrics

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// MultiplicityHolm names the correction applied to the labels of metrics outside --fail-on.
const MultiplicityHolm = "holm"

// finishPerRun sets a per-run scalar's interval from the spread between runs (Welch t over the
// per-run values). With one run per side the spread is unknown: "not assessable".
func finishPerRun(md *MetricDelta, base, cand []float64, conf float64) {
	if math.IsNaN(md.Base) || math.IsNaN(md.Cand) {
		md.Base, md.Cand = zeroNaN(md.Base), zeroNaN(md.Cand)
		md.Verdict = VerdictNA
		return
	}
	md.Delta = md.Cand - md.Base
	md.Method = MethodRuns
	se, df, ok := welch(base, cand)
	if !ok {
		md.CILow, md.CIHigh = md.Delta, md.Delta
		md.Verdict = VerdictNotAssessable
		md.Note = "not assessable with one run per side: a per-run number varies between runs, and one run per side cannot show by how much (use repeats)"
		return
	}
	setInterval(md, se, df, conf)
}

// finishProportion sets a proportion's interval (Newcombe on effective sample sizes). The
// design effect is a property of the design (the same trace on the same kind of system), so
// the larger of the two sides' applies to both: a side at 0% shows no clustering of its own.
func finishProportion(md *MetricDelta, b, c propSide, conf float64) {
	deff := max(b.deff, c.deff)
	b.deff, c.deff = deff, deff
	b.nEff, c.nEff = max(1, b.n/deff), max(1, c.n/deff)
	md.Delta = md.Cand - md.Base
	md.Method = MethodNewcombe
	lo, hi := newcombe(b, c, conf)
	md.CILow, md.CIHigh = lo, hi
	md.PValue = newcombeP(b, c)
	// The standard error the score interval implies, for the MDE.
	z := distuv.UnitNormal.Quantile(1 - (1-conf)/2)
	md.SE = (hi - lo) / (2 * z)
	md.MDE = (z + distuv.UnitNormal.Quantile(MDEPower)) * md.SE
	verdictByInterval(md)
}

// judge settles the verdicts once every metric has its interval: the metrics named in
// --fail-on are judged by their own interval and rules (the gate); the labels of the others
// (better, worse, and "changed" for descriptive metrics, which are never better or worse) are
// Holm-adjusted at 1 − conf, so that the chance of any false label among them stays at the
// nominal level. It returns warnings for rules below the design's minimum detectable effect.
func judge(ms []MetricDelta, specs []metricSpec, th []Threshold, conf float64, runsPerSide int) []string {
	gated := map[string]bool{}
	for _, t := range th {
		gated[t.Metric] = true
	}
	var family []int
	for i := range ms {
		md := &ms[i]
		if gated[md.Name] {
			applyThresholds(md, specs[i].info, th)
			continue
		}
		switch md.Verdict {
		case VerdictBetter, VerdictWorse, VerdictChanged, VerdictUnchanged:
			family = append(family, i)
		}
	}
	alpha := 1 - conf
	for k, adj := range holm(ms, family) {
		md := &ms[family[k]]
		md.PAdjusted = adj
		if adj >= alpha && md.Verdict != VerdictUnchanged {
			md.Verdict = VerdictUnchanged
			md.Note = fmt.Sprintf("interval excludes 0, but not after the Holm correction over %d metrics (adjusted p %.3g)", len(family), adj)
		}
	}
	var warns []string
	for i := range ms {
		md := &ms[i]
		if !gated[md.Name] {
			continue
		}
		for _, t := range th {
			if t.Metric != md.Name {
				continue
			}
			if w := mdeWarning(md, t, conf, runsPerSide); w != "" {
				warns = append(warns, w)
			}
		}
	}
	return warns
}

// holm returns the Holm step-down adjusted p-values of ms[family[k]].PValue.
func holm(ms []MetricDelta, family []int) []float64 {
	m := len(family)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ms[family[idx[a]]].PValue < ms[family[idx[b]]].PValue })
	adj := make([]float64, m)
	running := 0.0
	for rank, k := range idx {
		p := math.Min(1, float64(m-rank)*ms[family[k]].PValue)
		running = math.Max(running, p)
		adj[k] = running
	}
	return adj
}

// mdeWarning says when rule t is tighter than the smallest change the design can detect,
// and about how many runs per side would reach it (the standard error shrinks as √runs).
func mdeWarning(md *MetricDelta, t Threshold, conf float64, runs int) string {
	if md.Verdict == VerdictNA || md.Verdict == VerdictRegressed {
		return "" // nothing to judge, or the rule caught a change anyway
	}
	if md.Verdict == VerdictNotAssessable || md.Verdict == VerdictWithheld {
		return fmt.Sprintf("--fail-on %s cannot be judged: %s is %s (%s)", t.Text, md.Name, md.Verdict, md.Note)
	}
	mde, unit := md.MDE, md.Unit
	limit := math.Abs(t.Value)
	if t.Relative {
		mde, unit = md.MDEPct, "%"
	}
	if mde <= limit || limit == 0 || mde == 0 {
		return ""
	}
	need := int(math.Ceil(float64(max(runs, 1)) * (mde / limit) * (mde / limit)))
	return fmt.Sprintf("--fail-on %s is below this design's minimum detectable effect for %s (%.3g%s at %.0f%% power, %g%% confidence): a real change of that size would usually pass; about %d runs per side (now %d) would bring the MDE down to the rule",
		t.Text, md.Name, mde, unitSep(unit), MDEPower*100, conf*100, need, max(runs, 1))
}

func unitSep(u string) string {
	if u == "%" {
		return "%"
	}
	return " " + u
}
