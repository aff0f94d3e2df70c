package engineadapter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// engineArm is an A/B arm on a reference engine served over HTTP (recordingEngine), which
// keeps its prefix cache from one ab invocation to the next as a real server does.
type engineArm struct {
	arm runner.Arm
	log *promptLog
}

func newEngineArm(t *testing.T, name string) *engineArm {
	srv, eng, log := recordingEngine(t, "vllm", 0)
	lo := loadgen.Options{Target: loadgen.Target{URL: srv.URL, Model: eng.ServedModelName(), Backend: "vllm", Stream: true},
		Tokenizer: tokenizer.Reference{}, Seed: 3, Grace: time.Second}
	return &engineArm{log: log, arm: runner.Arm{Name: name, Produce: runner.HTTPProducer(lo, 50), Salted: runner.SaltedHTTPProducer(lo, 50),
		Info: metrics.RunInfo{Seed: 3}}}
}

// uniqueTrace: 8 requests of 600 tokens with nothing shared by design (no hash ids).
func uniqueTrace() []traces.Request {
	var reqs []traces.Request
	for i := range 8 {
		reqs = append(reqs, traces.Request{ID: fmt.Sprint(i), Arrival: time.Duration(i) * 30 * time.Millisecond, InputTokens: 600, OutputTokens: 4})
	}
	return reqs
}

// abInvocation runs one ab of a and b with nonce and returns the result and the prompts each
// arm's server got during it.
func abInvocation(t *testing.T, a, b *engineArm, nonce uint64, failOn ...metrics.Threshold) (*runner.ABResult, map[string][]string) {
	t.Helper()
	seen := map[string]int{"A": len(a.log.entries), "B": len(b.log.entries)}
	opts := runner.ABOptions{Requests: uniqueTrace(), Repeats: 2, WarmupRequests: 2, OutDir: t.TempDir(), Independence: runner.Independence{Salt: true},
		SaltNonce: nonce, Compare: metrics.CompareOptions{Resamples: 200, Seed: 1, Confidence: 0.95, Thresholds: failOn}}
	res, err := runner.AB(context.Background(), opts, a.arm, b.arm)
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string][]string{}
	for name, arm := range map[string]*engineArm{"A": a, "B": b} {
		sent[name] = slices.Clone(arm.log.entries[seen[name]:])
		slices.Sort(sent[name])
	}
	return res, sent
}

// TestABNonceNeverMeetsEarlierPrompts: a second ab invocation with a fresh nonce sends no
// prompt the first sent (warm-up included), so a server that kept its prefix cache serves it
// cold; an invocation given the first one's nonce sends exactly the first one's prompts. The
// nonce is kept in the result and in every run's facts.
func TestABNonceNeverMeetsEarlierPrompts(t *testing.T) {
	a, b := newEngineArm(t, "A"), newEngineArm(t, "B")
	first, p1 := abInvocation(t, a, b, 7)
	second, p2 := abInvocation(t, a, b, 8)
	third, p3 := abInvocation(t, a, b, 7)
	for _, arm := range []string{"A", "B"} {
		for _, p := range p2[arm] {
			if slices.Contains(p1[arm], p) {
				t.Fatalf("arm %s: the second invocation sent a prompt of the first", arm)
			}
		}
		if !slices.Equal(p1[arm], p3[arm]) {
			t.Errorf("arm %s: the invocation given the first one's nonce sent other prompts", arm)
		}
		if len(p1[arm]) != 2+2*8 {
			t.Errorf("arm %s: %d prompts in an invocation, want 2 warm-up and 2 runs of 8", arm, len(p1[arm]))
		}
	}
	for _, c := range []struct {
		res   *runner.ABResult
		nonce uint64
	}{{first, 7}, {second, 8}, {third, 7}} {
		if c.res.SaltNonce != c.nonce || !strings.Contains(c.res.Independence, fmt.Sprintf("nonce %d", c.nonce)) {
			t.Errorf("result nonce %d, independence %q; want %d", c.res.SaltNonce, c.res.Independence, c.nonce)
		}
		for i, s := range c.res.Summaries["B"] {
			if s.Run.SaltNonce != c.nonce || s.Run.PromptSalt != runner.RepeatSalt(c.nonce, i+1) {
				t.Errorf("B run %d: facts nonce %d salt %d", i+1, s.Run.SaltNonce, s.Run.PromptSalt)
			}
		}
	}
	if c := second.Comparison; c.CacheConfound != nil {
		t.Errorf("fresh nonces on both warm servers: confound %+v", c.CacheConfound)
	}
}

// TestABCacheConfoundWithheld: the case. An ab runs; arm A's server is restarted, B's
// keeps its cache, and the ab is run again with the same nonce: B finds every prompt cached,
// A none, where the trace designs no reuse. The comparison says so above the verdict and
// withholds the verdicts the prefill is part of (TTFT, E2E, goodput, the hit rate), not TPOT's;
// a --fail-on rule on TTFT is not judged. Run again with a fresh nonce, it is no confound.
func TestABCacheConfoundWithheld(t *testing.T) {
	a, b := newEngineArm(t, "A"), newEngineArm(t, "B")
	if res, _ := abInvocation(t, a, b, 11); res.Comparison.CacheConfound != nil {
		t.Fatalf("two fresh servers: confound %+v", res.Comparison.CacheConfound)
	}
	a = newEngineArm(t, "A") // restarted: its cache is empty
	rules, err := metrics.ParseFailOn("ttft.p50>+1%")
	if err != nil {
		t.Fatal(err)
	}
	res, _ := abInvocation(t, a, b, 11, rules...)
	c := res.Comparison
	cc := c.CacheConfound
	if cc == nil {
		t.Fatalf("no confound: base %+v, cand %+v", c.Base.Summary.PrefixCache, c.Cand.Summary.PrefixCache)
	}
	t.Logf("confound: %+v", *cc)
	if c.Regressed || !slices.ContainsFunc(c.Warnings, func(w string) bool {
		return strings.HasPrefix(w, "--fail-on ttft.p50>+1% cannot be judged: ttft.p50 is withheld")
	}) {
		t.Errorf("the rule on a withheld metric: regressed %v, warnings %q", c.Regressed, c.Warnings)
	}
	if cc.CandHitRate < 0.5 || cc.BaseHitRate > 0.1 || cc.Excess < metrics.CacheConfoundLimit || cc.CandDesigned != 0 {
		t.Errorf("confound %+v", cc)
	}
	if len(c.Warnings) == 0 || c.Warnings[0] != cc.Statement || !strings.HasPrefix(cc.Statement, "CONFOUND") {
		t.Errorf("the statement is not the first warning: %q", c.Warnings)
	}
	for _, m := range c.Metrics {
		family, _, _ := strings.Cut(m.Name, ".")
		switch {
		case family == "ttft" || family == "e2e" || family == "goodput" || m.Name == metrics.PrefixCacheMetric:
			if m.Verdict != metrics.VerdictWithheld && m.Verdict != metrics.VerdictNA {
				t.Errorf("%s: verdict %q, want withheld", m.Name, m.Verdict)
			}
		case family == "tpot" || family == "itl":
			if m.Verdict == metrics.VerdictWithheld {
				t.Errorf("%s: withheld, but decode is not the prefill", m.Name)
			}
		}
	}
	if !slices.Contains(cc.Withheld, "ttft.p50") || !slices.Contains(cc.Withheld, metrics.PrefixCacheMetric) {
		t.Errorf("withheld %v", cc.Withheld)
	}
	// compare over the same results directories finds the same confound from their summaries.
	srcA, errA := runner.RecordSources(res.Dirs["A"])
	srcB, errB := runner.RecordSources(res.Dirs["B"])
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	again, err := metrics.Compare(srcA, srcB, metrics.CompareOptions{Resamples: 50, Seed: 1,
		DesignedHitRate: [2]*float64{runner.DesignedHitRate(res.Dirs["A"]), runner.DesignedHitRate(res.Dirs["B"])}})
	if err != nil || again.CacheConfound == nil {
		t.Errorf("compare of the same directories: %v, confound %+v", err, again)
	}
	if res, _ := abInvocation(t, newEngineArm(t, "A"), b, 12); res.Comparison.CacheConfound != nil {
		t.Errorf("a fresh nonce against the warm server: confound %+v", res.Comparison.CacheConfound)
	}
}
