package calibrate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/internal/pipenet"
	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// bubbleClock is a refengine.Clock on a synctest bubble's time.
type bubbleClock struct{ epoch time.Time }

func (c *bubbleClock) Now() time.Duration             { return time.Since(c.epoch) }
func (c *bubbleClock) Wall(d time.Duration) time.Time { return c.epoch.Add(d) }
func (c *bubbleClock) SleepUntil(ctx context.Context, t time.Duration) error {
	return sleepCtx(ctx, t-c.Now())
}

// loadClock is a loadgen.Clock on the bubble's time.
type loadClock struct{}

func (loadClock) Now() time.Time { return time.Now() }
func (loadClock) SleepUntil(ctx context.Context, t time.Time) error {
	return sleepCtx(ctx, time.Until(t))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// servedTrace is n requests arriving as a Poisson process at rate per second.
func servedTrace(n int, rate float64, seed uint64) []traces.Request {
	rng := rand.New(rand.NewPCG(seed, 3))
	var t float64
	reqs := make([]traces.Request, n)
	for i := range reqs {
		t += rng.ExpFloat64() / rate
		reqs[i] = traces.Request{ID: "q" + time.Duration(i).String(), Arrival: time.Duration(t * 1e9),
			InputTokens: 64 + rng.IntN(3000), OutputTokens: 32 + rng.IntN(300)}
	}
	return reqs
}

// serveRun serves the engine of cfg over HTTP inside a synctest bubble (an in-memory network,
// the bubble's virtual clock), replays reqs against it with loadgen, streaming, and writes the
// records into dir as a results directory.
func serveRun(t *testing.T, cfg refengine.Config, reqs []traces.Request, dir string) string {
	t.Helper()
	return serveRuns(t, cfg, [][]traces.Request{reqs}, []string{dir})[0]
}

// serveRuns is serveRun for several traces replayed one after the other against one engine
// (its prefix cache kept between them), each into its own directory of dirs.
func serveRuns(t *testing.T, cfg refengine.Config, runs [][]traces.Request, dirs []string) []string {
	t.Helper()
	recs := make([][]metrics.Record, len(runs))
	synctest.Test(t, func(t *testing.T) {
		cfg.Clock = &bubbleClock{epoch: time.Now()}
		eng, err := refengine.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ln := pipenet.New()
		srv := &http.Server{Handler: eng.Handler()}
		served := make(chan struct{})
		go func() { srv.Serve(ln); close(served) }()
		defer func() { srv.Close(); <-served; eng.Close() }()
		lo := loadgen.Options{
			Target: loadgen.Target{URL: "http://engine", Model: eng.ServedModelName(), Backend: "openai", API: "completions", Stream: true},
			Seed:   1, Grace: time.Second, Clock: loadClock{}, Dial: ln.Dial, Tokenizer: tokenizer.Reference{},
		}
		for i, reqs := range runs {
			var mu sync.Mutex
			if _, err := loadgen.Run(context.Background(), reqs, lo, func(r *metrics.Record) {
				mu.Lock()
				defer mu.Unlock()
				cp := *r
				cp.Chunks = append([]metrics.Chunk(nil), r.Chunks...)
				recs[i] = append(recs[i], cp)
			}); err != nil {
				t.Fatal(err)
			}
		}
	})
	for i, dir := range dirs {
		w, err := metrics.CreateRecordFile(filepath.Join(dir, RecordsFile))
		if err != nil {
			t.Fatal(err)
		}
		for j := range recs[i] {
			if err := w.Write(&recs[i][j]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dirs
}

// hiddenServer is the deployment the fit is not told: an A100 (the fit is told H100) at its
// own efficiencies and step overhead, 4 slots (max-num-seqs 4) and prompts prefilled 512
// tokens a step, like a llama.cpp server with 4 slots and a 512-token batch.
func hiddenServer(t *testing.T) refengine.Config {
	g, _ := perf.LookupGPU("a100")
	g.BWEff, g.FLOPEff, g.StepOverhead = 0.35, 0.30, 6*time.Millisecond
	g.KVBWEff = g.BWEff * perf.DefaultKVBWEff / perf.DefaultBWEff
	reg := perf.NewRegistry()
	if err := reg.Add(nil, []perf.GPU{g}); err != nil {
		t.Fatal(err)
	}
	return refengine.Config{GPU: "a100", Profiles: reg, MaxNumSeqs: 4, MaxNumBatchedTokens: 512, DisablePrefixCaching: true, Seed: 1}
}

// TestCalibrateThenSimulateServed is issue 35 item 4's goal: the reference engine served over
// HTTP with a configuration the fit is not told answers 60 requests at 0.2 per second;
// calibrate on that run learns the 4 slots and the 512-token prefill chunks, fits its own
// TTFT and TPOT P50 within 10%, and the profile it writes, read as simulate reads it
// (--profiles alone, no --max-num-seqs), predicts a run at 3× the load on the same server
// within 15% on TTFT P50, TPOT P50 and throughput. Without the learned cap the prediction
// misses, so the test can tell.
func TestCalibrateThenSimulateServed(t *testing.T) {
	low := serveRun(t, hiddenServer(t), servedTrace(60, 0.2, 1), t.TempDir())
	high := serveRun(t, hiddenServer(t), servedTrace(60, 0.6, 2), t.TempDir())
	res, err := Run(Options{Engine: refengine.Config{GPU: "h100", DisablePrefixCaching: true, Seed: 1}, Fit: []string{low},
		FitMaxNumSeqs: true, FitMaxNumBatchedTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Table())
	if res.MaxNumSeqs != 4 || res.CapSource != CapFromQueue || res.MaxNumBatchedTokens != 512 {
		t.Errorf("learned max-num-seqs %d (from %q) and budget %d; the server runs 4 slots and 512-token chunks",
			res.MaxNumSeqs, res.CapSource, res.MaxNumBatchedTokens)
	}
	checkResiduals(t, "own data", res.Residuals, map[string]float64{"ttft_p50": 0.10, "tpot_p50": 0.10})
	if len(res.Warnings) > 0 {
		t.Errorf("warnings on a fit the engine's model can make: %v", res.Warnings)
	}
	data, err := FormatProfile(nil, res)
	if err != nil {
		t.Fatal(err)
	}
	cfg := profileEngine(t, data)
	r, err := load(high)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulate(r, cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	pred := residuals(r, sim)
	for _, x := range pred {
		t.Logf("3x load: %-10s predicted %10.2f %-5s measured %10.2f (%+.1f%%)", x.Quantity, x.Simulated, x.Unit, x.Measured, x.RelErr*100)
	}
	checkResiduals(t, "3x load", pred, map[string]float64{"ttft_p50": 0.15, "tpot_p50": 0.15, "throughput": 0.15})
	// The 3x run alone has too few requests that had the server to themselves for the
	// prefill fit: the budget comes from the replay instead.
	if n := len(idlePrefills([]run{r})); n >= minPrefills {
		t.Fatalf("the 3x run has %d idle prefills: it does not exercise the replay's budget fit", n)
	}
	res3, err := Run(Options{Engine: refengine.Config{GPU: "h100", DisablePrefixCaching: true, Seed: 1}, Fit: []string{high}, MaxEvals: 240,
		FitMaxNumSeqs: true, FitMaxNumBatchedTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	if res3.MaxNumSeqs != 4 || res3.MaxNumBatchedTokens != 512 {
		t.Errorf("fitted on the 3x run: max-num-seqs %d, budget %d; the server runs 4 slots and 512-token chunks\n%s",
			res3.MaxNumSeqs, res3.MaxNumBatchedTokens, res3.Table())
	}
	checkResiduals(t, "3x run's own data", res3.Residuals, map[string]float64{"ttft_p50": 0.10, "tpot_p50": 0.10})
	cfg.MaxNumSeqs = 0
	if sim, err = simulate(r, cfg, 0); err != nil {
		t.Fatal(err)
	}
	for _, x := range residuals(r, sim) {
		if x.Quantity == "ttft_p50" && math.Abs(x.RelErr) < 0.5 {
			t.Errorf("without the learned cap TTFT P50 is off by only %+.0f%%: the test cannot tell a cap", x.RelErr*100)
		}
	}
}

// profileEngine is the engine configuration simulate builds from --profiles alone with a
// calibrated profile (the GPU named in its calibration block; cmd/llmbench/flags_calibrate.go).
func profileEngine(t *testing.T, data []byte) refengine.Config {
	t.Helper()
	reg := perf.NewRegistry()
	if err := reg.LoadJSON(data, "profile.json"); err != nil {
		t.Fatal(err)
	}
	c, err := ParseProfileCalibration(data, "profile.json")
	if err != nil || c == nil {
		t.Fatalf("calibration block: %+v %v", c, err)
	}
	return refengine.Config{GPU: c.GPU, Profiles: reg, MaxNumSeqs: c.MaxNumSeqs, MaxNumBatchedTokens: c.MaxNumBatchedTokens,
		DisablePrefixCaching: true, Seed: 1}
}

// checkResiduals fails the quantities of rs beyond their bound in bounds, and those missing.
func checkResiduals(t *testing.T, what string, rs []Residual, bounds map[string]float64) {
	t.Helper()
	seen := map[string]bool{}
	for _, x := range rs {
		b, ok := bounds[x.Quantity]
		if !ok {
			continue
		}
		seen[x.Quantity] = true
		if math.Abs(x.RelErr) > b {
			t.Errorf("%s: %s %.2f %s, measured %.2f (%+.1f%%, bound %.0f%%)", what, x.Quantity, x.Simulated, x.Unit, x.Measured, x.RelErr*100, b*100)
		}
	}
	for q := range bounds {
		if !seen[q] {
			t.Errorf("%s: no %s residual", what, q)
		}
	}
}

// TestWarnsWhenModelCannotFit: a server that holds every other request 2 s before its
// first token, whatever its prompt or the load (a swap, a cold start), is outside the
// engine's model: no constants reproduce both its TTFT P50 and P99, and the fit says so in
// its residuals, a warning and the profile.
func TestWarnsWhenModelCannotFit(t *testing.T) {
	dir := t.TempDir()
	w, err := metrics.CreateRecordFile(filepath.Join(dir, RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		at := int64(i) * 5e9
		first := at + 50e6
		if i%2 == 1 {
			first = at + 2e9
		}
		rec := &metrics.Record{ID: fmt.Sprintf("r%d", i), Intended: at, Dispatched: at, Sent: at, Headers: at, FirstToken: first,
			InputTokens: 1000, OutputTokens: 50, Status: 200}
		for k := range 50 {
			rec.Chunks = append(rec.Chunks, metrics.Chunk{T: first + int64(k)*20e6, Tokens: 1})
		}
		rec.End = rec.Chunks[49].T
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := Run(Options{Engine: refengine.Config{GPU: "h100", DisablePrefixCaching: true, Seed: 1}, Fit: []string{dir},
		FitMaxNumSeqs: true, FitMaxNumBatchedTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Table())
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "ttft_p") || !strings.Contains(res.Table(), "warning: ") {
		t.Errorf("no warning naming TTFT: %q\n%s", res.Warnings, res.Table())
	}
	data, err := FormatProfile(nil, res)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseProfileCalibration(data, "p.json")
	if err != nil || c == nil || len(c.Warnings) != 1 || len(c.Residuals) != len(res.Residuals) {
		t.Errorf("the profile does not carry the residuals and the warning: %+v %v", c, err)
	}
}
