package usecase

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
)

// defaultSweep is sweep's options as the CLI's flag defaults set them, on the virtual clock,
// over chat-small.
func defaultSweep(t *testing.T) *SweepOptions {
	ab := defaultAB(t)
	ab.Load.TimeScale, ab.Load.MaxRequests = 1, 0
	return &SweepOptions{
		Trace:   TraceOptions{Path: chatSmall, MaxSpan: DefaultMaxSpan, RateScale: 1, TimeScale: 1},
		Goodput: 0.9, Precision: 0.05, MaxPoints: 12, MinDuration: time.Minute, Simulate: true,
		Target: ab.Target, Load: ab.Load, Output: ab.Output, Engine: ab.Engine,
		Metrics:  MetricOptions{InputTol: metrics.DefaultInputTolerance, Stall: "5x", GPUs: 1, Currency: "USD", SLO: "ttft=500ms,tpot=50ms"},
		Replicas: ReplicaOptions{Replicas: 1, Router: refengine.RouterRoundRobin},
	}
}

// TestSweepSimulatedPoints measures two loads on the virtual clock from the options alone:
// a point directory each, sweep.json with both loads, and the table and capacity on stdout.
func TestSweepSimulatedPoints(t *testing.T) {
	o := defaultSweep(t)
	o.Points = "1,64"
	env, out, errb := testEnv()
	code, err := Sweep(context.Background(), env, o)
	if err != nil || code != ExitOK {
		t.Fatalf("Sweep: exit %d, %v; stderr:\n%s", code, err, errb)
	}
	b, err := os.ReadFile(filepath.Join(o.Output.Out, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Points []metrics.SweepPoint `json:"points"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	var rates []float64
	for _, p := range res.Points {
		rates = append(rates, p.Rate)
	}
	if !slices.Equal(rates, []float64{1, 64}) {
		t.Fatalf("sweep.json points at %v, want [1 64]", rates)
	}
	if res.Points[0].GoodputFraction < res.Points[1].GoodputFraction {
		t.Errorf("goodput rose with the load: %v then %v", res.Points[0].GoodputFraction, res.Points[1].GoodputFraction)
	}
	for _, want := range []string{"load (req/s)", "capacity:", "results: " + o.Output.Out} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

// TestSweepRefusesBadOptions checks the options refused before any point is measured.
func TestSweepRefusesBadOptions(t *testing.T) {
	given := func(names ...string) Changed { return func(n string) bool { return slices.Contains(names, n) } }
	for _, tc := range []struct {
		name   string
		change func(o *SweepOptions)
		want   string
	}{
		{"no slo", func(o *SweepOptions) { o.Metrics.SLO = "" }, "sweep needs --slo"},
		{"scrape", func(o *SweepOptions) { o.Target.ScrapeMetric = true }, "--scrape-metrics applies to run"},
		{"simulate concurrency", func(o *SweepOptions) { o.ByConcurrency = true }, "--simulate sweeps arrival rate only"},
		{"simulate endpoint", func(o *SweepOptions) { o.Target.Endpoint = "http://127.0.0.1:1" }, "does not take --endpoint"},
		{"rate-scale", func(o *SweepOptions) { o.Changed = given("rate-scale") }, "--rate-scale: sweep sets each point's rate"},
		{"points and start", func(o *SweepOptions) { o.Points = "1"; o.Changed = given("start") }, "--start steers the capacity search"},
		{"http flag simulated", func(o *SweepOptions) { o.Changed = given("api") }, "--api acts on HTTP requests"},
		{"http faults simulated", func(o *SweepOptions) { o.Engine.Faults = "status-503=0.1" }, "do not apply to --simulate"},
		{"router alone", func(o *SweepOptions) { o.Replicas.Changed = given("router") }, "--router round-robin routes between replicas"},
		{"replicas over http", func(o *SweepOptions) {
			o.Simulate = false
			o.Replicas.Replicas = 2
			o.Replicas.Changed = given("replicas")
		}, "they need --simulate"},
		{"points", func(o *SweepOptions) { o.Points = "1,-2" }, `--points "1,-2"`},
		{"points not a number", func(o *SweepOptions) { o.Points = "4,NaN" }, `--points "4,NaN"`},
		{"points infinite", func(o *SweepOptions) { o.Points = "Inf" }, `--points "Inf"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultSweep(t)
			tc.change(o)
			env, out, _ := testEnv()
			code, err := Sweep(context.Background(), env, o)
			if code != ExitBadInput || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("exit %d, %v; want 2 and an error with %q", code, err, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout holds %q for refused options", out)
			}
		})
	}
}
