package reports

import (
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestFractionIntervalsInPoints: a fraction's change reads in percentage points, never as a
// percent of the base (issue 32: "+30.8% [-260.1%, +309.0%]" for stalled requests); other
// metrics read in percent of the base; a gated fraction's MDE is in the rule's unit.
func TestFractionIntervalsInPoints(t *testing.T) {
	stalls := metrics.MetricDelta{Name: "stalls.requests_fraction", Unit: "fraction", Better: metrics.BetterLower,
		Base: 0.162, Cand: 0.212, Delta: 0.05, DeltaPct: 30.8, CILow: -0.041, CIHigh: 0.14, CILowPct: -25.3, CIHighPct: 86.4,
		Verdict: metrics.VerdictUnchanged, MDE: 0.095, MDEPct: 58.6}
	ttft := metrics.MetricDelta{Name: "ttft.p95", Unit: "ms", Better: metrics.BetterLower, Base: 100, Cand: 90, Delta: -10,
		DeltaPct: -10, CILow: -120, CIHigh: 30, CILowPct: -100, CIHighPct: 30, Verdict: metrics.VerdictUnchanged, MDE: 40, MDEPct: 40}
	for _, c := range []struct {
		m        metrics.MetricDelta
		rule     string
		ci, mde  string
		deltaPct string
	}{
		{stalls, "stalls>+2pp", "[-4.1 pp, +14.0 pp]", " (MDE 9.5 pp)", "+30.8%"},
		{stalls, "stalls>+10%", "[-4.1 pp, +14.0 pp]", " (MDE 58.6%)", "+30.8%"},
		{ttft, "ttft.p95>+5%", "[-100.0%, +30.0%]", " (MDE 40.0%)", "-10.0%"},
	} {
		c.m.Threshold = c.rule
		if got := ciPct(c.m); got != c.ci {
			t.Errorf("%s: interval %q, want %q", c.m.Name, got, c.ci)
		}
		if got := mdeText(c.m); got != c.mde {
			t.Errorf("%s with %s: MDE %q, want %q", c.m.Name, c.rule, got, c.mde)
		}
		if got := deltaPctText(c.m); got != c.deltaPct {
			t.Errorf("%s: delta%% %q, want %q", c.m.Name, got, c.deltaPct)
		}
	}
}
