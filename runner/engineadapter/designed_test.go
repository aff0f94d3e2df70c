package engineadapter

import (
	"context"
	"math"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

// agenticPreset30s is the agentic preset (llmbench gen --preset agentic) over 30 s at 0.5
// sessions/s.
func agenticPreset30s(t *testing.T) []traces.Request {
	t.Helper()
	spec, err := workloads.Preset("agentic")
	if err != nil {
		t.Fatal(err)
	}
	spec.Seed, spec.DurationS, spec.Arrival.Rate = 7, 30, 0.5
	reqs, err := workloads.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

// TestDesignedHitRateOverHTTP: the agentic preset replayed over HTTP on an engine with ample
// KV cache reuses what the trace designs, within 1 pp, over the same requests.
func TestDesignedHitRateOverHTTP(t *testing.T) {
	reqs := agenticPreset30s(t)
	byID := traces.DesignedReuseByID(reqs, traces.DefaultBlockTokens)
	recs, _, _ := engineRun(t, reqs, refengine.Config{Seed: 7, Wire: "vllm"}, "chat", true)
	designed := func(id string, _ int) (int64, int64, bool) {
		d, ok := byID[id]
		return d.First, d.Input, ok
	}
	sum, err := metrics.Summarize(metrics.SliceSource(recs), metrics.Options{DesignedReuse: designed})
	if err != nil {
		t.Fatal(err)
	}
	pc := sum.PrefixCache
	if pc == nil || pc.DesignedHitRate == nil || pc.Reported != int64(len(reqs)) {
		t.Fatalf("%d requests, prefix cache block %+v", len(reqs), pc)
	}
	st := traces.ComputeStats(reqs)
	if pc.DesignedCachedTokens != st.PrefixReuseTokens || pc.DesignedPromptTokens != st.TotalInputTokens {
		t.Errorf("designed %d of %d tokens, trace stats %d of %d", pc.DesignedCachedTokens, pc.DesignedPromptTokens,
			st.PrefixReuseTokens, st.TotalInputTokens)
	}
	t.Logf("achieved %.4f, designed %.4f", pc.HitRate, *pc.DesignedHitRate)
	if math.Abs(pc.HitRate-*pc.DesignedHitRate) > 0.01 || pc.HitRate < 0.3 || pc.BelowDesigned() {
		t.Errorf("achieved %.4f, designed %.4f: want them within 1 pp", pc.HitRate, *pc.DesignedHitRate)
	}
}

// TestDesignedHitRateSimulated: runner.Execute with the simulator fills the designed rate from
// the trace; with ample KV the achieved rate meets it within 1 pp, with prefix caching off it is
// 0 and the summary marks it below designed. A recomputed summary keeps it.
func TestDesignedHitRateSimulated(t *testing.T) {
	reqs := agenticPreset30s(t)
	st := traces.ComputeStats(reqs)
	for _, off := range []bool{false, true} {
		sim := &Simulator{Config: refengine.Config{Seed: 7, DisablePrefixCaching: off}, RateScale: 1}
		res, err := runner.Execute(context.Background(), runner.Options{Requests: reqs, OutDir: t.TempDir(),
			Info: metrics.RunInfo{Mode: "simulated"}}, sim.Produce)
		if err != nil {
			t.Fatal(err)
		}
		pc := res.Summary.PrefixCache
		if pc == nil || pc.DesignedHitRate == nil {
			t.Fatalf("caching off %v: prefix cache block %+v", off, pc)
		}
		if pc.DesignedCachedTokens != st.PrefixReuseTokens || *pc.DesignedHitRate != st.PrefixReuse {
			t.Errorf("caching off %v: designed %d tokens (%.4f), trace stats %d (%.4f)", off,
				pc.DesignedCachedTokens, *pc.DesignedHitRate, st.PrefixReuseTokens, st.PrefixReuse)
		}
		t.Logf("caching off %v: achieved %.4f, designed %.4f", off, pc.HitRate, *pc.DesignedHitRate)
		switch {
		case off && (pc.CachedTokens != 0 || !pc.BelowDesigned()):
			t.Errorf("caching off: %d cached tokens, below designed %v", pc.CachedTokens, pc.BelowDesigned())
		case !off && (math.Abs(pc.HitRate-*pc.DesignedHitRate) > 0.01 || pc.BelowDesigned()):
			t.Errorf("achieved %.4f, designed %.4f: want them within 1 pp", pc.HitRate, *pc.DesignedHitRate)
		}
		// report --recompute (Resummarize) has no trace: it keeps the designed reuse.
		re, err := runner.Resummarize(res.Dir, res.Summary, metrics.Options{StallMultiple: 3})
		if err != nil {
			t.Fatal(err)
		}
		if rp := re.PrefixCache; rp == nil || rp.DesignedHitRate == nil || *rp.DesignedHitRate != *pc.DesignedHitRate ||
			rp.DesignedCachedTokens != pc.DesignedCachedTokens {
			t.Errorf("caching off %v: recomputed block %+v, designed lost", off, rp)
		}
	}
}
