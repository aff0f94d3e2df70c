package usecase

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestReportWithoutCobra renders a simulated run from ReportOptions alone: JSON as it is, then
// with an SLO given, which recomputes the summary (goodput appears); options that would do
// nothing with the format are refused.
func TestReportWithoutCobra(t *testing.T) {
	sim := defaultSimulate(t)
	env, _, errb := testEnv()
	if code, err := Simulate(context.Background(), env, sim); code != ExitOK || err != nil {
		t.Fatalf("simulate: exit %d, %v\n%s", code, err, errb)
	}
	read := func(o *ReportOptions) *metrics.Summary {
		t.Helper()
		env, out, _ := testEnv()
		if err := Report(env, o); err != nil {
			t.Fatalf("Report: %v", err)
		}
		var s metrics.Summary
		if err := json.Unmarshal(out.Bytes(), &s); err != nil {
			t.Fatalf("--format json: %v", err)
		}
		return &s
	}
	mo := defaultAB(t).Metrics
	plain := read(&ReportOptions{Dir: sim.Output.Out, Format: "json", Metrics: mo})
	if plain.Requests.Total != 20 || len(plain.Goodput.SLO) != 0 {
		t.Fatalf("summary as written: %d requests, goodput %+v", plain.Requests.Total, plain.Goodput)
	}
	mo.SLO, mo.Changed = "ttft=10s,tpot=1s", func(n string) bool { return n == "slo" }
	again := read(&ReportOptions{Dir: sim.Output.Out, Format: "json", Metrics: mo})
	if again.Goodput.SLO["ttft"] != 10000 || again.Goodput.Met != 20 {
		t.Fatalf("an --slo given did not recompute the summary: goodput %+v", again.Goodput)
	}
	for _, tc := range []struct {
		o    ReportOptions
		want string
	}{
		{ReportOptions{Format: "terminal", EChartsJS: "e.js"}, "--echarts-js is inlined into report.html"},
		{ReportOptions{Format: "json", Open: true}, "--open opens report.html"},
		{ReportOptions{Format: "yaml"}, `--format "yaml"`},
	} {
		tc.o.Dir, tc.o.Metrics = sim.Output.Out, defaultAB(t).Metrics
		env, _, _ := testEnv()
		if err := Report(env, &tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.o, err, tc.want)
		}
	}
}
