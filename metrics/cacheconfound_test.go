package metrics

import (
	"strings"
	"testing"
)

// TestCheckCacheConfound: the sides' excess over their design decides, not the raw hit rates:
// a side that reuses less than designed (eviction, a smaller cache) is a property of its
// server; one that reuses more met the prompts before. A side with no design borrows the
// other's only when the sides replayed the same requests.
func TestCheckCacheConfound(t *testing.T) {
	pc := func(hit float64, designed *float64) *PrefixCache {
		return &PrefixCache{HitRate: hit, PromptTokens: 1000, DesignedHitRate: designed}
	}
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name       string
		base, cand *PrefixCache
		given      [2]*float64
		paired     bool
		want       bool
	}{
		{"both cold", pc(0.01, f(0)), pc(0.02, f(0)), [2]*float64{}, true, false},
		{"candidate warm", pc(0.013, f(0)), pc(0.993, f(0)), [2]*float64{}, true, true},
		{"base warm", pc(0.9, f(0.5)), pc(0.5, f(0.5)), [2]*float64{}, true, true},
		{"below the design is no confound", pc(0.2, f(0.8)), pc(0.8, f(0.8)), [2]*float64{}, true, false},
		{"within the limit", pc(0.55, f(0.5)), pc(0.6, f(0.5)), [2]*float64{}, true, false},
		{"design given by the caller", pc(0.0, nil), pc(0.7, nil), [2]*float64{f(0), f(0)}, true, true},
		{"design borrowed when paired", pc(0.0, f(0)), pc(0.7, nil), [2]*float64{}, true, true},
		{"not borrowed unpaired", pc(0.0, f(0)), pc(0.7, nil), [2]*float64{}, false, false},
		{"no design at all", pc(0.0, nil), pc(0.7, nil), [2]*float64{}, true, false},
		{"a side without reports", nil, pc(0.7, f(0)), [2]*float64{}, true, false},
	} {
		cc := checkCacheConfound(c.base, c.cand, c.given, c.paired)
		if (cc != nil) != c.want {
			t.Errorf("%s: confound %+v, want %v", c.name, cc, c.want)
		}
	}
	cc := checkCacheConfound(pc(0.013, f(0)), pc(0.993, f(0)), [2]*float64{}, true)
	ms := []MetricDelta{{Name: "ttft.p50", Verdict: VerdictBetter}, {Name: "tpot.p50", Verdict: VerdictBetter},
		{Name: "goodput.fraction", Verdict: VerdictUnchanged}, {Name: PrefixCacheMetric, Verdict: VerdictBetter}, {Name: "e2e.p99", Verdict: VerdictNA}}
	cc.withhold(ms, "plain", "spec")
	got := []string{}
	for _, m := range ms {
		got = append(got, m.Verdict)
	}
	if strings.Join(got, ",") != "withheld,better,withheld,withheld,n/a" || len(cc.Withheld) != 3 {
		t.Errorf("verdicts %v, withheld %v", got, cc.Withheld)
	}
	if !strings.Contains(cc.Statement, "plain found 1.3%") || !strings.Contains(cc.Statement, "spec 99.3%") || !strings.Contains(cc.Statement, "spec's server had these prompts cached") {
		t.Errorf("statement %q", cc.Statement)
	}
}

// TestWarmWarning: a run warns beyond 20 pp over its design, not at it, and never without one.
func TestWarmWarning(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		hit  float64
		des  *float64
		warn bool
	}{{0.998, f(0), true}, {0.70, f(0.5), false}, {0.71, f(0.5), true}, {0.9, nil, false}, {0.3, f(0.9), false}} {
		w := WarmWarning(&PrefixCache{HitRate: c.hit, PromptTokens: 100, DesignedHitRate: c.des})
		if (w != "") != c.warn || c.warn && !strings.HasPrefix(w, warmPrefix) {
			t.Errorf("hit %.3f designed %v: warning %q", c.hit, c.des, w)
		}
	}
	if WarmWarning(nil) != "" {
		t.Error("no block, a warning")
	}
}
