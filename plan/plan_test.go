package plan

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner/engineadapter"
	"github.com/llmbench/llmbench/traces"
)

// testTrace is n chat-like requests at rate req/s with seeded exponential gaps and lengths.
func testTrace(n int, rate float64, seed uint64) []traces.Request {
	st := seed
	next := func() float64 { // splitmix64 in [0, 1)
		st += 0x9e3779b97f4a7c15
		z := st
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return float64((z^(z>>31))>>11) / (1 << 53)
	}
	out := make([]traces.Request, n)
	var t time.Duration
	for i := range out {
		t += time.Duration(-math.Log(1-next()) / rate * float64(time.Second))
		out[i] = traces.Request{ID: fmt.Sprintf("r%d", i), Arrival: t, Class: "chat",
			InputTokens: 200 + int(next()*1800), OutputTokens: 20 + int(next()*280)}
	}
	return out
}

func options(reqs []traces.Request) Options {
	return Options{
		Requests: engineadapter.SimRequests(reqs, 1),
		Record:   func(i int, tl *refengine.Timeline, rec *metrics.Record) { engineadapter.FillRecord(rec, tl, &reqs[i]) },
		Base:     refengine.Config{Seed: 1},
		GPUs:     []string{"h100", "a100"},
		Dtypes:   []string{"bf16", "fp8"},
		TPs:      []int{1},
		Router:   refengine.RouterLeastLoaded,
		SLO:      metrics.Options{SLO: metrics.SLO{TTFT: 300 * time.Millisecond, TPOT: 30 * time.Millisecond}},
		Target:   0.9,
		Prices:   map[string]float64{"h100-sxm": 2.5, "a100-80gb": 1.5},
		Currency: "USD",
		Workers:  2,
	}
}

// alone re-simulates c by itself, without the search's early stop, and summarizes its records
// with metrics.Summarize: the goodput a user would see from simulate --replicas.
func alone(t *testing.T, o Options, reqs []traces.Request, c *Candidate) float64 {
	t.Helper()
	cfg := o.Base
	cfg.GPU, cfg.WeightDtype, cfg.TP = c.GPU, c.Dtype, c.TP
	res, err := refengine.SimulateCluster(o.Requests, cfg, refengine.ClusterOptions{Replicas: c.Replicas, Router: o.Router})
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]metrics.Record, len(reqs))
	for i := range res.Timelines {
		recs[i] = *engineadapter.TimelineRecord(&res.Timelines[i], &reqs[i])
	}
	sum, err := metrics.Summarize(metrics.SliceSource(recs), o.SLO)
	if err != nil {
		t.Fatal(err)
	}
	return sum.Goodput.Fraction
}

// TestPlanChoiceMeetsTheTargetAlone: the chosen deployment, re-simulated on its own and
// summarized by metrics, meets the target with the goodput plan reported; a cheaper deployment
// the search rejected misses it when re-simulated on its own too; every deployment cheaper
// than the choice was rejected.
func TestPlanChoiceMeetsTheTargetAlone(t *testing.T) {
	reqs := testTrace(1500, 24, 3)
	o := options(reqs)
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Candidates {
		t.Logf("%-28s %6.2f/h goodput %.3f meets %v stopped %v %s", c.Name(), c.PricePerHour, c.Goodput, c.Meets, c.Stopped, c.Note)
	}
	b := res.Best
	if b == nil {
		t.Fatal("no deployment meets the target")
	}
	if g := alone(t, o, reqs, b); g < o.Target || math.Abs(g-b.Goodput) > 1e-9 {
		t.Errorf("%s re-simulated alone: goodput %.4f (plan said %.4f, target %.2f)", b.Name(), g, b.Goodput, o.Target)
	}
	if b.CostPerMTokens <= 0 || b.PricePerHour != float64(b.GPUs)*o.Prices[b.GPU] {
		t.Errorf("%s: price %.2f/h for %d GPUs, %.4f per Mtok", b.Name(), b.PricePerHour, b.GPUs, b.CostPerMTokens)
	}
	var rejected *Candidate
	for i := range res.Candidates {
		c := &res.Candidates[i]
		if c.Replicas == 0 || c.PricePerHour >= b.PricePerHour {
			continue
		}
		if c.Meets {
			t.Errorf("%s costs %.2f/h, less than the choice %s (%.2f/h), and meets the target", c.Name(), c.PricePerHour, b.Name(), b.PricePerHour)
		}
		if rejected == nil || c.PricePerHour > rejected.PricePerHour || (c.PricePerHour == rejected.PricePerHour && c.Goodput > rejected.Goodput) {
			rejected = c
		}
	}
	if rejected == nil {
		t.Fatal("no cheaper deployment was simulated and rejected")
	}
	if g := alone(t, o, reqs, rejected); g >= o.Target || g > rejected.Goodput+1e-9 {
		t.Errorf("cheaper %s re-simulated alone: goodput %.4f; plan said %.4f (an upper bound when stopped: %v)", rejected.Name(), g, rejected.Goodput, rejected.Stopped)
	}
	if res.Simulated+res.RuledOut != res.Searched || res.Simulated != len(res.Candidates) {
		t.Errorf("counts: searched %d, simulated %d, ruled out %d, %d candidates", res.Searched, res.Simulated, res.RuledOut, len(res.Candidates))
	}
}

// TestPlanRulesOutWhatDoesNotFit: a 70B model in bf16 on one GPU is ruled out without a
// simulation, with the reason; TP=2 is searched.
func TestPlanRulesOutWhatDoesNotFit(t *testing.T) {
	reqs := testTrace(40, 2, 5)
	o := options(reqs)
	o.Base.Model = "llama-3.1-70b"
	o.GPUs, o.Dtypes, o.TPs = []string{"h100"}, []string{"bf16"}, []int{1, 2}
	o.MaxReplicas = 2
	o.SLO.SLO = metrics.SLO{E2E: time.Hour}
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.RuledOut != 1 || res.Best == nil || res.Best.TP != 2 || res.Best.Replicas != 1 {
		t.Fatalf("ruled out %d, best %+v", res.RuledOut, res.Best)
	}
	last := res.Candidates[len(res.Candidates)-1]
	if last.Replicas != 0 || last.TP != 1 || !strings.Contains(last.Note, "do not fit") {
		t.Errorf("ruled-out entry %+v", last)
	}
}

// TestPlanStopsHopelessSimulations: a deployment far from the target stops early with an
// upper bound below the target.
func TestPlanStopsHopelessSimulations(t *testing.T) {
	reqs := testTrace(800, 60, 7)
	o := options(reqs)
	o.GPUs, o.Dtypes = []string{"a100"}, []string{"bf16"}
	o.MaxReplicas = 1
	res, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Candidates[0]
	if res.Best != nil || !c.Stopped || c.Goodput >= o.Target || res.StoppedEarly != 1 {
		t.Fatalf("best %v, candidate %+v", res.Best, c)
	}
}

func TestPlanRefusesBadOptions(t *testing.T) {
	reqs := testTrace(10, 1, 1)
	for name, mod := range map[string]func(*Options){
		"no price":     func(o *Options) { delete(o.Prices, "a100-80gb") },
		"unknown gpu":  func(o *Options) { o.GPUs = []string{"tpu"} },
		"target":       func(o *Options) { o.Target = 1.5 },
		"no slo":       func(o *Options) { o.SLO = metrics.Options{} },
		"replicas":     func(o *Options) { o.MinReplicas, o.MaxReplicas = 4, 2 },
		"tp":           func(o *Options) { o.TPs = []int{0} },
		"no requests":  func(o *Options) { o.Requests = nil },
		"no record fn": func(o *Options) { o.Record = nil },
	} {
		o := options(reqs)
		mod(&o)
		if _, err := Run(o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestGrouped(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 149309995: "149,309,995", -12155: "-12,155"} {
		if got := grouped(n); got != want {
			t.Errorf("grouped(%d) = %q, want %q", n, got, want)
		}
	}
}
