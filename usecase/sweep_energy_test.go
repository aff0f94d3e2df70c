package usecase

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
)

// TestSweepPowerMetrics sweeps an engine served over HTTP (h100-sxm, real time) with
// --power-metrics naming its /metrics as the DCGM exporter: every point reads its energy
// (power-metrics.json in its directory, J/request and tokens per joule in sweep.json, a
// J/request column on stdout), each point's figures those of its own summary.
func TestSweepPowerMetrics(t *testing.T) {
	url := startEngine(t, "h100-sxm")
	o := defaultSweep(t)
	o.Simulate, o.Target.Endpoint, o.MinDuration = false, url, 0
	o.Points, o.Load.MaxRequests = "4,16", 24
	o.Metrics.SLO = "ttft=5s,tpot=200ms"
	o.PowerMetrics = []string{url + "/metrics"}
	o.Capacity.SaturationMin, o.Capacity.SaturationTTFT = DefaultSaturationMinTime, DefaultSaturationMinTTFT
	env, out, errb := testEnv()
	if code, err := Sweep(context.Background(), env, o); err != nil || code != ExitOK {
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
	if len(res.Points) != 2 {
		t.Fatalf("%d points, want 2", len(res.Points))
	}
	for _, p := range res.Points {
		if p.JoulesPerRequest == nil || p.OutputTokensPerJoule == nil {
			t.Fatalf("point %g has no energy: %+v", p.Rate, p)
		}
		s, err := runner.ReadSummary(p.Dir)
		if err != nil || s.Energy == nil || !s.Energy.Available {
			t.Fatalf("point %g summary energy: %v", p.Rate, err)
		}
		if *s.Energy.JoulesPerRequest != *p.JoulesPerRequest || *p.JoulesPerRequest <= 0 {
			t.Errorf("point %g: %g J/request in sweep.json, %g in its summary", p.Rate, *p.JoulesPerRequest, *s.Energy.JoulesPerRequest)
		}
		if _, err := os.Stat(filepath.Join(p.Dir, runner.PowerFile)); err != nil {
			t.Errorf("point %g: %v", p.Rate, err)
		}
	}
	if !strings.Contains(out.String(), "J/request") {
		t.Errorf("stdout has no J/request column:\n%s", out)
	}
}

// TestSweepPowerMetricsRefused: --power-metrics with the simulated or embedded engine, with
// --time-scale, or naming no http(s) URL is refused before any point runs.
func TestSweepPowerMetricsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*SweepOptions)
		want string
	}{
		{"simulate", func(o *SweepOptions) {}, "--power-metrics reads the GPU power of an --endpoint or --serve-cmd server"},
		{"embedded", func(o *SweepOptions) { o.Simulate = false }, "--power-metrics reads the GPU power of an --endpoint or --serve-cmd server"},
		{"time scale", func(o *SweepOptions) {
			o.Simulate, o.Target.Endpoint, o.Load.TimeScale = false, "http://127.0.0.1:1", 4
		}, "drop --time-scale"},
		{"not http", func(o *SweepOptions) {
			o.Simulate, o.Target.Endpoint, o.PowerMetrics = false, "http://127.0.0.1:1", []string{"gpu-node:9400"}
		}, `--power-metrics "gpu-node:9400"`},
	} {
		o := defaultSweep(t)
		o.PowerMetrics = []string{"http://127.0.0.1:1/metrics"}
		c.set(o)
		env, _, _ := testEnv()
		if code, err := Sweep(context.Background(), env, o); code != ExitBadInput || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: exit %d, %v; want %q", c.name, code, err, c.want)
		}
	}
}
