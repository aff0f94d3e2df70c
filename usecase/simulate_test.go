package usecase

import (
	"context"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
)

// defaultSimulate is simulate's options as the CLI's flag defaults set them, over the first
// 20 requests of chat-small.
func defaultSimulate(t *testing.T) *SimulateOptions {
	ab := defaultAB(t)
	return &SimulateOptions{Trace: TraceOptions{Path: chatSmall, MaxSpan: DefaultMaxSpan, RateScale: 1, TimeScale: 1},
		RateScale: 1, MaxRequests: 20, Engine: ab.Engine, Replicas: ReplicaOptions{Replicas: 1, Router: refengine.RouterRoundRobin},
		Metrics: ab.Metrics, Output: ab.Output, Fail: ab.Fail}
}

// TestSimulateTwoReplicasWithoutCobra simulates from the options alone, on two replicas: the
// summary counts the 20 requests, records the engine seed and replicas, and the results line
// is on stdout.
func TestSimulateTwoReplicasWithoutCobra(t *testing.T) {
	o := defaultSimulate(t)
	o.Engine.Seed = "5"
	o.Replicas = ReplicaOptions{Replicas: 2, Router: refengine.RouterLeastLoaded}
	env, out, errb := testEnv()
	code, err := Simulate(context.Background(), env, o)
	if err != nil || code != ExitOK {
		t.Fatalf("Simulate: exit %d, %v; stderr:\n%s", code, err, errb)
	}
	s, err := runner.ReadSummary(o.Output.Out)
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests.Total != 20 || s.Requests.Succeeded != 20 || s.Run.EngineSeed != 5 || s.Run.Mode != "simulated" {
		t.Errorf("requests %d/%d, engine seed %d, mode %q", s.Requests.Succeeded, s.Requests.Total, s.Run.EngineSeed, s.Run.Mode)
	}
	if !strings.Contains(out.String(), "results: "+o.Output.Out) {
		t.Errorf("stdout lacks the results line:\n%s", out)
	}
}

// TestSimulateRefusesHTTPOnly checks the flags that mean something only over HTTP.
func TestSimulateRefusesHTTPOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(o *SimulateOptions)
		want   string
	}{
		{"wire", func(o *SimulateOptions) { o.Engine.Changed = func(n string) bool { return n == "wire" } }, "--wire shapes the HTTP stream"},
		{"faults", func(o *SimulateOptions) { o.Engine.Faults = "reset-mid=0.1" }, "act on HTTP streams and do not apply to simulate"},
		{"input tolerance", func(o *SimulateOptions) { o.Metrics.Changed = func(n string) bool { return n == "input-tolerance" } }, "--input-tolerance checks a server's count"},
		{"rate", func(o *SimulateOptions) { o.RateScale = 0 }, "--rate-scale must be > 0"},
		{"router", func(o *SimulateOptions) { o.Replicas.Router = "random" }, `--router "random"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultSimulate(t)
			tc.change(o)
			env, out, _ := testEnv()
			code, err := Simulate(context.Background(), env, o)
			if code != ExitBadInput || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("exit %d, %v; want 2 and an error with %q", code, err, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout holds %q", out)
			}
		})
	}
}
