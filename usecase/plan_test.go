package usecase

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/plan"
	"github.com/llmbench/llmbench/refengine"
)

// defaultPlan is plan's options as the CLI's flag defaults set them, with the search of the
// cmd test (TestPlanCommand): chat-small at 4 times its rate, two GPUs, two dtypes.
func defaultPlan() *PlanOptions {
	return &PlanOptions{
		Trace:  TraceOptions{Path: chatSmall, MaxSpan: DefaultMaxSpan, RateScale: 4, TimeScale: 1},
		Engine: defaultEngine(), SLO: "ttft=400ms,tpot=40ms", Target: 0.9,
		GPUs: []string{"h100", "a100"}, Dtypes: []string{"bf16", "fp8"}, TPs: []int{1}, Replicas: "1..4",
		Router: refengine.RouterRoundRobin, Prices: []string{"h100=$2.49", "a100=1.79"}, Currency: "USD",
		RateScale: 4, Format: "json",
	}
}

// TestPlanWithoutCobra searches from PlanOptions alone: the JSON on stdout names a best
// deployment that meets the target and is the cheapest candidate that does, and the HTML
// report is written; a target nothing meets exits 1 with no error.
func TestPlanWithoutCobra(t *testing.T) {
	o := defaultPlan()
	o.HTML = filepath.Join(t.TempDir(), "plan.html")
	env, out, errb := testEnv()
	code, err := Plan(env, o)
	if code != ExitOK || err != nil {
		t.Fatalf("Plan: exit %d, %v; stderr:\n%s", code, err, errb)
	}
	var res plan.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not the plan's JSON: %v", err)
	}
	if res.Best == nil || res.Best.Goodput < o.Target {
		t.Fatalf("best %+v does not meet the target %g", res.Best, o.Target)
	}
	for _, c := range res.Candidates {
		if c.Meets && c.PricePerHour < res.Best.PricePerHour {
			t.Errorf("candidate %+v meets the target for less than the best %+v", c, res.Best)
		}
	}
	if _, err := os.Stat(o.HTML); err != nil || !strings.Contains(errb.String(), "plan report: "+o.HTML) {
		t.Errorf("HTML report: %v; stderr:\n%s", err, errb)
	}
	o = defaultPlan()
	o.SLO, o.Replicas = "ttft=1ms", "1"
	env, _, _ = testEnv()
	if code, err := Plan(env, o); code != ExitRegression || err != nil {
		t.Errorf("a target nothing meets: exit %d, %v; want 1 and no error", code, err)
	}
}

// TestPlanRefusesBadOptions checks the options refused before any simulation.
func TestPlanRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(o *PlanOptions)
		want   string
	}{
		{"format", func(o *PlanOptions) { o.Format = "html" }, `--format "html"`},
		{"no slo", func(o *PlanOptions) { o.SLO = "" }, "plan needs --slo"},
		{"rate", func(o *PlanOptions) { o.RateScale = -1 }, "--rate-scale must be > 0"},
		{"router", func(o *PlanOptions) { o.Router = "nearest" }, `--router "nearest"`},
		{"replicas", func(o *PlanOptions) { o.Replicas = "4..2" }, `--replicas "4..2"`},
		{"price", func(o *PlanOptions) { o.Prices = []string{"tpu=1"} }, "--price-gpu-hour tpu"},
		{"trace", func(o *PlanOptions) { o.Trace.Path = "missing.jsonl" }, "missing.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultPlan()
			tc.change(o)
			env, out, _ := testEnv()
			code, err := Plan(env, o)
			if code != ExitBadInput || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("exit %d, %v; want 2 and an error with %q", code, err, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout holds %q", out)
			}
		})
	}
}

// TestPlanRefusesCancellations: plan simulates, so a trace with cancel_after_ms is refused as
// simulate refuses it (the timelines have no client to go away) instead of counting the
// cancelled requests as completed.
func TestPlanRefusesCancellations(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "cancel.jsonl")
	if err := os.WriteFile(trace, []byte(`{"id":"a","arrival_s":0,"input_tokens":10,"output_tokens":5}`+"\n"+
		`{"id":"b","arrival_s":0.1,"input_tokens":10,"output_tokens":50,"cancel_after_ms":20}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := defaultPlan()
	o.Trace.Path = trace
	env, _, _ := testEnv()
	code, err := Plan(env, o)
	if code != ExitBadInput || err == nil || !strings.Contains(err.Error(), "1 requests of the trace carry cancel_after_ms") {
		t.Fatalf("exit %d, %v", code, err)
	}
}
