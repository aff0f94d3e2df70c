package plan

import (
	"math"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
)

// TestPlanTokensPerJoule: with the tokens-per-joule objective the choice meets the target and
// has the most output tokens per joule of those that do; its figure is the engine's own
// energy for that deployment re-simulated alone; the cost objective of the same search picks
// the cheapest instead.
func TestPlanTokensPerJoule(t *testing.T) {
	reqs := testTrace(400, 12, 5)
	o := options(reqs)
	o.GPUs = []string{"h100", "a100", "h200"}
	o.Dtypes = []string{"bf16"}
	o.Prices["h200"] = 3.5
	o.Objective = ObjectiveTokensPerJoule
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Best == nil || res.Objective != ObjectiveTokensPerJoule {
		t.Fatalf("no choice: %+v", res)
	}
	b := res.Best
	for _, c := range res.Candidates {
		if c.Meets && c.TokensPerJoule > b.TokensPerJoule {
			t.Errorf("%s meets with %v tokens/J, more than the choice %s (%v)", c.Name(), c.TokensPerJoule, b.Name(), b.TokensPerJoule)
		}
	}
	cfg := o.Base
	cfg.GPU, cfg.WeightDtype, cfg.TP = b.GPU, b.Dtype, b.TP
	alone, err := refengine.SimulateCluster(o.Requests, cfg, refengine.ClusterOptions{Replicas: b.Replicas, Router: o.Router})
	if err != nil {
		t.Fatal(err)
	}
	want := float64(alone.Stats.GenerationTokens) / alone.Stats.EnergyJ
	if math.Abs(b.TokensPerJoule-want) > 1e-9*want || !strings.Contains(res.Report("t", "").Headline, "tokens/J") {
		t.Errorf("choice %v tokens/J, alone %v", b.TokensPerJoule, want)
	}

	o.Objective = ""
	cost, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cost.Candidates {
		if c.Meets && c.PricePerHour < cost.Best.PricePerHour {
			t.Errorf("cost objective chose %s over the cheaper %s", cost.Best.Name(), c.Name())
		}
	}
}

// TestPlanObjectiveRefused: an unknown objective, and tokens per joule on a GPU without power
// figures, are refused before any simulation.
func TestPlanObjectiveRefused(t *testing.T) {
	o := options(testTrace(20, 5, 1))
	o.Objective = "speed"
	if _, err := Run(o); err == nil || !strings.Contains(err.Error(), "tokens-per-joule") {
		t.Errorf("objective speed: %v", err)
	}
	reg := perf.NewRegistry()
	if err := reg.Add(nil, []perf.GPU{{Name: "nopower", MemBytes: 80e9, MemBW: 3e12, BF16FLOPS: 900e12, LinkBW: 400e9}}); err != nil {
		t.Fatal(err)
	}
	o.Base.Profiles = reg
	o.GPUs, o.Prices = []string{"nopower"}, map[string]float64{"nopower": 1}
	o.Objective = ObjectiveTokensPerJoule
	if _, err := Run(o); err == nil || !strings.Contains(err.Error(), "no power figures") {
		t.Errorf("GPU without power: %v", err)
	}
}
