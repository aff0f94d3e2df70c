package usecase

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine/perf"
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
