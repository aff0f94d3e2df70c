package usecase

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine/perf"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/runner/engineadapter"
)

// TestABEnergyPerArm runs ab over HTTP between two embedded engines that differ only in their
// GPU (A h100-sxm, B a100-80gb) with three runs per arm, and checks the energy each arm's runs
// carry from the engine's DCGM metrics: known in every run, each side's J/request and tokens per
// joule inside the interval across its runs, its average power between its profile's idle and
// board power (refengine/perf/power.go), and — as the power model says for small-batch decode,
// where both GPUs draw idle + 0.3 of their dynamic range (≈ 259 W on the H100, 162 W on the
// A100) — B's joules per request below A's and its tokens per joule above.
func TestABEnergyPerArm(t *testing.T) {
	o := defaultAB(t)
	o.Runs = "3"
	o.Load.MaxRequests = 40
	o.BEngine = []string{"gpu=a100-80gb"}
	o.ArmEngine = func(overrides []string) (EngineOptions, error) {
		e := o.Engine
		if slices.Equal(overrides, o.BEngine) {
			e.GPU = "a100-80gb"
		}
		return e, nil
	}
	env, out, errb := testEnv()
	if code, err := AB(context.Background(), env, o); err != nil || code != ExitOK {
		t.Fatalf("AB: exit %d, %v; stderr:\n%s", code, err, errb)
	}
	var c metrics.Comparison
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatalf("stdout is not the comparison's JSON: %v", err)
	}
	e := c.Energy
	if e == nil {
		t.Fatal("the comparison has no energy: the arms' runs carry none")
	}
	for _, s := range []struct {
		name string
		gpu  string
		side metrics.EnergySide
	}{{"A", "h100-sxm", e.Base}, {"B", "a100-80gb", e.Cand}} {
		if s.side.Runs != 3 || s.side.Known != 3 {
			t.Fatalf("arm %s: power known in %d of %d runs, want 3 of 3; note %q", s.name, s.side.Known, s.side.Runs, e.Note)
		}
		for _, f := range []struct {
			v  *float64
			ci *metrics.EnergyInterval
		}{{s.side.JoulesPerRequest, s.side.JoulesPerRequestCI}, {s.side.OutputTokensPerJoule, s.side.OutputTokensPerJouleCI}} {
			if f.ci == nil || f.ci.Runs != 3 || !(f.ci.Lo <= *f.v && *f.v <= f.ci.Hi) {
				t.Errorf("arm %s: figure %g, interval %+v", s.name, *f.v, f.ci)
			}
		}
		g, err := perf.LookupGPU(s.gpu)
		p, ok := perf.PowerOf(g)
		if err != nil || !ok {
			t.Fatalf("power of %s: %v", s.gpu, err)
		}
		if w := *s.side.AvgPowerW; w < p.IdleW || w > p.BoardW {
			t.Errorf("arm %s (%s): average power %.1f W outside idle %g W .. board %g W", s.name, s.gpu, w, p.IdleW, p.BoardW)
		}
	}
	t.Logf("A %.1f %+v J/request, %.1f W; B %.1f %+v J/request, %.1f W", *e.Base.JoulesPerRequest, *e.Base.JoulesPerRequestCI,
		*e.Base.AvgPowerW, *e.Cand.JoulesPerRequest, *e.Cand.JoulesPerRequestCI, *e.Cand.AvgPowerW)
	if !(*e.Cand.JoulesPerRequest < *e.Base.JoulesPerRequest) || !(*e.Cand.OutputTokensPerJoule > *e.Base.OutputTokensPerJoule) {
		t.Errorf("a100 arm %.1f J/request, %.2f tok/J vs h100 arm %.1f J/request, %.2f tok/J: want fewer joules per request on the a100",
			*e.Cand.JoulesPerRequest, *e.Cand.OutputTokensPerJoule, *e.Base.JoulesPerRequest, *e.Base.OutputTokensPerJoule)
	}
}

// startEngine serves the reference engine on a GPU profile at real time on a loopback port,
// as `llmbench serve --gpu gpu` would, for the test's lifetime.
func startEngine(t *testing.T, gpu string) string {
	t.Helper()
	e := defaultEngine()
	e.GPU = gpu
	cfg, err := e.Config()
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engineadapter.StartEmbedded(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	return eng.URL
}

// TestABPowerMetricsOfEndpointArms: two endpoint arms (engines on h100-sxm and a100-80gb
// served over HTTP at real time) with --a-power-metrics naming A's server's /metrics as its
// DCGM exporter: A's runs read their energy from it (power-metrics.json in each run directory),
// with an interval across its two runs and a power within the h100-sxm's idle..board. B's
// exporters are its server's and one that is not there: its power is unknown in every run,
// never zero nor the one exporter's share.
func TestABPowerMetricsOfEndpointArms(t *testing.T) {
	a, b := startEngine(t, "h100-sxm"), startEngine(t, "a100-80gb")
	o := defaultAB(t)
	o.Trace.TimeScale, o.Load.TimeScale = 1, 1
	o.Load.MaxRequests, o.Load.RateScale, o.WarmupRequests = 12, 4, 1
	o.AEndpoint, o.BEndpoint = a, b
	o.APower, o.BPower = []string{a + "/metrics"}, []string{b + "/metrics", "http://127.0.0.1:1/metrics"}
	env, out, errb := testEnv()
	if code, err := AB(context.Background(), env, o); err != nil || code != ExitOK {
		t.Fatalf("AB: exit %d, %v; stderr:\n%s", code, err, errb)
	}
	var c metrics.Comparison
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatalf("stdout is not the comparison's JSON: %v", err)
	}
	e := c.Energy
	if e == nil || e.Base.Known != 2 || e.Base.JoulesPerRequestCI == nil || e.Cand.Known != 0 || e.Cand.Runs != 2 {
		t.Fatalf("energy %+v: want A known in 2 of 2 runs with an interval, B unknown in 2", e)
	}
	if e.Cand.JoulesPerRequest != nil || e.JoulesPerRequestChange != nil {
		t.Errorf("B's missing exporter gave figures: %+v", e.Cand)
	}
	if w := *e.Base.AvgPowerW; w < 70 || w > 700 {
		t.Errorf("A's average power %.1f W outside the h100-sxm's idle 70 W .. board 700 W", w)
	}
	for _, d := range []string{"A-1", "A-2", "B-1", "B-2"} {
		if _, err := os.Stat(filepath.Join(o.Output.Out, d, runner.PowerFile)); err != nil {
			t.Errorf("run %s: %v", d, err)
		}
	}
}

// TestABPowerMetricsRefused: exporters for reference-engine arms, and an exporter that is
// no http(s) URL, are refused before anything runs.
func TestABPowerMetricsRefused(t *testing.T) {
	o := defaultAB(t)
	o.APower = []string{"http://127.0.0.1:9400/metrics"}
	env, _, _ := testEnv()
	if code, err := AB(context.Background(), env, o); code != ExitBadInput || err == nil || !strings.Contains(err.Error(), "--a-power-metrics reads the GPU power of --a-endpoint/--b-endpoint arms") {
		t.Errorf("engine arms with --a-power-metrics: exit %d, %v", code, err)
	}
	o = defaultAB(t)
	o.AEndpoint, o.BEndpoint = "http://127.0.0.1:1", "http://127.0.0.1:2"
	o.BPower = []string{"gpu-node:9400/metrics"}
	if code, err := AB(context.Background(), env, o); code != ExitBadInput || err == nil || !strings.Contains(err.Error(), `--b-power-metrics "gpu-node:9400/metrics"`) {
		t.Errorf("a bad exporter URL: exit %d, %v", code, err)
	}
}
