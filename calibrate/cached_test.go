package calibrate

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/racebuild"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
	"github.com/llmbench/llmbench/traces"
)

// sharedTrace is n requests at rate per second in groups sharing two 512-token blocks of
// prompt (a system prompt and a document), then a unique tail of 64 to 2,064 tokens: once a
// group's first request has run, its others find 1,024 of their tokens in the server's prefix
// cache.
func sharedTrace(n int, rate float64, seed uint64) []traces.Request {
	rng := rand.New(rand.NewPCG(seed, 4))
	var t float64
	reqs := make([]traces.Request, n)
	for i := range reqs {
		t += rng.ExpFloat64() / rate
		g := int64(rng.IntN(3))
		reqs[i] = traces.Request{ID: "s" + time.Duration(i).String(), Arrival: time.Duration(t * 1e9),
			InputTokens: 1024 + 64 + rng.IntN(2000), OutputTokens: 32 + rng.IntN(300), HashIDs: []int64{100 + 2*g, 101 + 2*g}}
	}
	return reqs
}

// withoutCached rewrites the records of dir with no cached tokens: the run as a fit that
// ignores the server's prefix cache sees it.
func withoutCached(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	w, err := metrics.CreateRecordFile(filepath.Join(out, RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := metrics.EachRecord(filepath.Join(dir, RecordsFile), func(r *metrics.Record) error {
		c := *r
		c.CachedInputTokens = 0
		return w.Write(&c)
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCachedPromptsPricedUncached (issue 45, item 4): a server whose prefix cache holds
// half of most prompts answers them faster than their length says. Priced on the uncached
// tokens the records carry, the fit finds the server's compute efficiency and fits its own
// TTFT; priced on whole prompts (the fit before) it takes the cache's speed for compute.
func TestCachedPromptsPricedUncached(t *testing.T) {
	racebuild.Heavy(t)
	hidden := hiddenServer(t)
	hidden.DisablePrefixCaching = false
	dir := serveRun(t, hidden, sharedTrace(60, 0.2, 3), t.TempDir())
	r := mustLoad(t, dir)
	if share := float64(r.cachedTokens) / float64(r.promptTokens); share < 0.3 {
		t.Fatalf("%.0f%% of the prompt tokens were cached: the run does not test cached prompts", share*100)
	}
	g, _ := perf.LookupGPU("a100")
	h, _ := perf.LookupGPU("h100")
	want := 0.30 * g.BF16FLOPS / h.BF16FLOPS // the hidden A100's compute, as the H100's fraction
	told := refengine.Config{GPU: "h100", DisablePrefixCaching: true, Seed: 1}
	fit := func(dir string) *Result {
		res, err := Run(Options{Engine: told, Fit: []string{dir}, FitMaxNumSeqs: true, FitMaxNumBatchedTokens: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Log("\n" + res.Table())
		return res
	}
	res := fit(dir)
	if e := res.Constants.FLOPEff/want - 1; math.Abs(e) > 0.10 {
		t.Errorf("priced on uncached tokens: flop_eff %.4f, the server's %.4f (%+.0f%%)", res.Constants.FLOPEff, want, e*100)
	}
	checkResiduals(t, "own data", res.Residuals, map[string]float64{"ttft_p50": 0.10, "tpot_p50": 0.10})
	if len(res.Notes) == 0 || !strings.Contains(strings.Join(res.Notes, " "), "prefix cache") {
		t.Errorf("no note of the cached prompts: %q", res.Notes)
	}
	old := fit(withoutCached(t, dir))
	if e := old.Constants.FLOPEff/want - 1; math.Abs(e) < 0.30 {
		t.Errorf("priced on whole prompts the fit finds flop_eff %.4f (%+.0f%%): the test cannot tell", old.Constants.FLOPEff, e*100)
	}
}

// TestWarmCacheKeepsCompute: the same trace replayed against a server that kept its prompts
// (the second calibration run: 99.8% of the prompt tokens from the cache) says nothing
// of compute. The fit says so, keeps the compute efficiency where it started instead of
// settling at a bound, and still fits what the run does show (TTFT, TPOT).
func TestWarmCacheKeepsCompute(t *testing.T) {
	hidden := hiddenServer(t)
	hidden.DisablePrefixCaching = false
	trace := servedTrace(40, 0.2, 5)
	dirs := serveRuns(t, hidden, [][]traces.Request{trace, trace}, []string{t.TempDir(), t.TempDir()})
	warm := mustLoad(t, dirs[1])
	if share := float64(warm.cachedTokens) / float64(warm.promptTokens); share < 0.95 {
		t.Fatalf("the second run found %.1f%% of its prompt tokens cached: not a warm cache", share*100)
	}
	res, err := Run(Options{Engine: refengine.Config{GPU: "h100", DisablePrefixCaching: true, Seed: 1}, Fit: []string{dirs[1]},
		FitMaxNumSeqs: true, FitMaxNumBatchedTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Table())
	if res.Constants.FLOPEff != perf.DefaultFLOPEff || res.MaxNumBatchedTokens != 0 {
		t.Errorf("flop_eff %.4g and budget %d fitted from a warm cache; want the start (%.4g) and none", res.Constants.FLOPEff, res.MaxNumBatchedTokens, perf.DefaultFLOPEff)
	}
	notes := strings.Join(res.Notes, "\n")
	if !strings.Contains(notes, "came from the server's prefix cache") || !strings.Contains(notes, "flush the server's prefix cache") {
		t.Errorf("notes do not say the cache was warm:\n%s", notes)
	}
	checkResiduals(t, "own data", res.Residuals, map[string]float64{"ttft_p50": 0.10, "tpot_p50": 0.10})
}
