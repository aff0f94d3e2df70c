package engineadapter

import (
	"context"
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// TestRunEnergyMatchesTheEngine runs a steady trace with --scrape-metrics against the
// reference engine over HTTP (real time, scraped every 100 ms) and checks the
// summary's energy against the engine's ground truth: its exact energy counter at the scrapes
// inside the measured window, whose average power the summary's (interpolated to the window's
// ends) must be within 3% of. Then the same scrapes with the energy counters taken out (an
// exporter with power gauges only): the trapezoid over the power samples must be within 5%.
func TestRunEnergyMatchesTheEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 6 s of real time")
	}
	eng, err := refengine.New(refengine.Config{Seed: 1, GPU: "h100", Model: "llama-3.1-8b", TimeScale: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	hs := httptest.NewServer(eng.Handler())
	defer hs.Close()
	srv := hs.URL
	reqs := make([]traces.Request, 120)
	for i := range reqs {
		reqs[i] = traces.Request{ID: "r" + strconv.Itoa(i), Arrival: time.Duration(i) * 50 * time.Millisecond, InputTokens: 512, OutputTokens: 128}
	}
	dir := t.TempDir()
	res, err := runner.RunHTTP(context.Background(), runner.HTTPRun{
		Trace: traces.FromSlice(reqs),
		Load: loadgen.Options{Target: loadgen.Target{URL: srv, Model: eng.ServedModelName(), Backend: "vllm", Stream: true},
			Tokenizer: tokenizer.Reference{}, Seed: 1, Grace: time.Second},
		TimeScale: 1, OutDir: dir, Scrape: true, Power: runner.PowerOptions{PricePerKWh: 0.25}, ScrapeInterval: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	var sm runner.ServerSamples
	data, err := os.ReadFile(filepath.Join(dir, runner.ScrapeFile))
	if err != nil || json.Unmarshal(data, &sm) != nil {
		t.Fatalf("server-metrics.json: %v", err)
	}
	truthW := windowTruth(t, sm, res.Summary.Throughput.WindowStartS, res.Summary.Throughput.WindowEndS)
	e := res.Summary.Energy
	if e == nil || !e.Available || e.Method != metrics.EnergyByCounter || e.GPUs != 1 {
		t.Fatalf("energy %+v", e)
	}
	t.Logf("ground truth %.1f W between the scrapes inside the window; counter %.1f W over the window (%.1f J, %.2f J/request, %.3f tok/J)", truthW, *e.AvgPowerW, *e.Joules, *e.JoulesPerRequest, *e.OutputTokensPerJoule)
	if rel := math.Abs(*e.AvgPowerW-truthW) / truthW; rel > 0.03 {
		t.Errorf("counter: %.1f W, ground truth %.1f W (%.1f%% off)", *e.AvgPowerW, truthW, 100*rel)
	}
	wantJPR := *e.AvgPowerW / res.Summary.Throughput.RequestsPerS
	if math.Abs(*e.JoulesPerRequest-wantJPR) > 1e-9*wantJPR || e.Cost == nil || math.Abs(*e.Cost-*e.Joules/3.6e6*0.25) > 1e-12 {
		t.Errorf("J/request %v (want %v), cost %v", *e.JoulesPerRequest, wantJPR, e.Cost)
	}

	// The power gauges alone, from the same scrapes.
	var pts []metrics.PowerPoint
	for _, s := range sm.Samples {
		for _, g := range s.GPUs {
			pts = append(pts, metrics.PowerPoint{T: s.T, PowerW: g.PowerW, EnergyMJ: -1})
		}
	}
	tp := res.Summary.Throughput
	pe := metrics.EnergyOver([]metrics.PowerSeries{{Key: "gpu0", Points: pts}}, metrics.EnergyOptions{StartS: tp.WindowStartS, EndS: tp.WindowEndS, RequestsPerS: tp.RequestsPerS})
	if !pe.Available || pe.Method != metrics.EnergyByPower {
		t.Fatalf("power-only energy %+v", pe)
	}
	t.Logf("power samples (%d scrapes): %.1f W", len(pts), *pe.AvgPowerW)
	if rel := math.Abs(*pe.AvgPowerW-truthW) / truthW; rel > 0.05 {
		t.Errorf("power samples: %.1f W, ground truth %.1f W (%.1f%% off)", *pe.AvgPowerW, truthW, 100*rel)
	}
}

// windowTruth is the engine's average power between the first and last scrapes inside
// [start, end], from its energy counter (the engine's exact cumulative energy when it rendered
// /metrics).
func windowTruth(t *testing.T, sm runner.ServerSamples, start, end float64) float64 {
	t.Helper()
	var t0, t1, e0, e1 float64
	n := 0
	for _, s := range sm.Samples {
		if s.T < start || s.T > end || len(s.GPUs) != 1 {
			continue
		}
		if n == 0 {
			t0, e0 = s.T, s.GPUs[0].EnergyMJ
		}
		t1, e1 = s.T, s.GPUs[0].EnergyMJ
		n++
	}
	if n < 2 || !(t1 > t0) {
		t.Fatalf("%d scrapes inside the window [%v, %v]", n, start, end)
	}
	return (e1 - e0) / 1000 / (t1 - t0)
}
