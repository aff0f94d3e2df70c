package main

import (
	"strings"
	"testing"
)

// TestFlagAudit: a flag that would do nothing in a mode is refused there, with a message that
// names it, before anything is started. One row per such case, over every command this file
// covers (ab, compare and sweep audit their own flags).
func TestFlagAudit(t *testing.T) {
	const ep = "http://127.0.0.1:1" // never contacted: each row fails while checking flags
	tr := chatSmall
	cases := []struct {
		name string
		args []string
		want string
	}{
		// run
		{"run engine flag with an endpoint", []string{"run", "--trace", tr, "--endpoint", ep, "--gpu", "h200"}, "--gpu"},
		{"run engine seed with an endpoint", []string{"run", "--trace", tr, "--endpoint", ep, "--engine-seed", "3"}, "--engine-seed"},
		{"run time scale with an endpoint", []string{"run", "--trace", tr, "--endpoint", ep, "--time-scale", "4"}, "--time-scale"},
		{"run closed loop and a cap", []string{"run", "--trace", tr, "--concurrency", "2", "--max-concurrency", "4"}, "--max-concurrency"},
		{"run token prices and GPU-hour cost", []string{"run", "--trace", tr, "--price-output", "2", "--gpu-hour-cost", "3"}, "--gpu-hour-cost"},
		{"run gpus without GPU-hour cost", []string{"run", "--trace", tr, "--gpus", "8"}, "--gpus"},
		{"run currency without a price", []string{"run", "--trace", tr, "--currency", "EUR"}, "--currency"},
		{"run spec alpha without k", []string{"run", "--trace", tr, "--spec-alpha", "0.7"}, "--spec-alpha"},
		{"run draft model without k", []string{"run", "--trace", tr, "--spec-draft-model", "llama-3.2-1b"}, "--spec-draft-model"},
		{"run transfer bandwidth without disaggregation", []string{"run", "--trace", tr, "--kv-transfer-gbps", "50"}, "--kv-transfer-gbps"},
		{"run engine seed zero", []string{"run", "--trace", tr, "--engine-seed", "0"}, "--engine-seed"},
		{"run batch size without embeddings", []string{"run", "--trace", tr, "--batch-size", "4"}, "--batch-size"},
		{"run unknown api", []string{"run", "--trace", tr, "--api", "rerank"}, "--api"},
		{"run server sizing on the engine", []string{"run", "--trace", tr, "--prompt-sizing", "server"}, "--prompt-sizing"},
		{"run unknown prompt sizing", []string{"run", "--trace", tr, "--endpoint", ep, "--prompt-sizing", "guess"}, "--prompt-sizing"},
		{"run input tolerance zero", []string{"run", "--trace", tr, "--input-tolerance", "0"}, "--input-tolerance"},
		// simulate
		{"simulate wire", []string{"simulate", "--trace", tr, "--wire", "tgi"}, "--wire"},
		{"simulate reasoning", []string{"simulate", "--trace", tr, "--reasoning", "0.5"}, "--reasoning"},
		{"simulate HTTP faults", []string{"simulate", "--trace", tr, "--faults", "status-503=0.1,early-eos=0.2"}, "status-503"},
		{"simulate no progress", []string{"simulate", "--trace", tr, "--no-progress"}, "--no-progress"},
		{"simulate input tolerance", []string{"simulate", "--trace", tr, "--input-tolerance", "0.1"}, "--input-tolerance"},
		{"simulate gpus without GPU-hour cost", []string{"simulate", "--trace", tr, "--gpus", "2"}, "--gpus"},
		{"simulate draft model without k", []string{"simulate", "--trace", tr, "--spec-draft-model", "llama-3.2-1b"}, "--spec-draft-model"},
		{"simulate router without replicas", []string{"simulate", "--trace", tr, "--router", "least-loaded"}, "--replicas"},
		{"simulate unknown router", []string{"simulate", "--trace", tr, "--replicas", "2", "--router", "random"}, "--router"},
		{"simulate zero replicas", []string{"simulate", "--trace", tr, "--replicas", "0"}, "--replicas"},
		// serve
		{"serve spec alpha without k", []string{"serve", "--spec-alpha", "0.5"}, "--spec-alpha"},
		{"serve draft model without k", []string{"serve", "--spec-draft-model", "llama-3.2-1b"}, "--spec-draft-model"},
		// report
		{"report echarts with terminal output", []string{"report", t.TempDir(), "--format", "terminal", "--echarts-js", "e.js"}, "--echarts-js"},
		{"report prices twice", []string{"report", t.TempDir(), "--price-input", "1", "--gpu-hour-cost", "2"}, "--gpu-hour-cost"},
		// compare
		{"compare echarts without html", []string{"compare", t.TempDir(), t.TempDir(), "--echarts-js", "e.js"}, "--echarts-js"},
		{"compare unknown format", []string{"compare", t.TempDir(), t.TempDir(), "--format", "yaml"}, "--format"},
		// ab
		{"ab repeat instead of repeats", []string{"ab", "--trace", tr, "--repeat", "3"}, "--repeats"},
		{"ab unknown format", []string{"ab", "--trace", tr, "--format", "html"}, "--format"},
		// sweep
		{"sweep closed-loop concurrency", []string{"sweep", "--trace", tr, "--slo", "ttft=1s", "--concurrency", "4"}, "--by-concurrency"},
		{"sweep rate scale", []string{"sweep", "--trace", tr, "--slo", "ttft=1s", "--rate-scale", "2"}, "--rate-scale"},
		{"sweep points and start", []string{"sweep", "--trace", tr, "--slo", "ttft=1s", "--points", "2,4", "--start", "3"}, "--start"},
		{"sweep points and precision", []string{"sweep", "--trace", tr, "--slo", "ttft=1s", "--points", "2,4", "--precision", "0.1"}, "--precision"},
		{"sweep points and max points", []string{"sweep", "--trace", tr, "--slo", "ttft=1s", "--points", "2,4", "--max-points", "3"}, "--max-points"},
		{"sweep simulate time scale", []string{"sweep", "--trace", tr, "--slo", "ttft=1s", "--simulate", "--time-scale", "4"}, "--time-scale"},
		{"sweep simulate wire", []string{"sweep", "--trace", tr, "--slo", "ttft=1s", "--simulate", "--wire", "tgi"}, "--wire"},
		{"sweep simulate timeout", []string{"sweep", "--trace", tr, "--slo", "ttft=1s", "--simulate", "--timeout-idle", "5s"}, "--timeout-idle"},
		{"sweep simulate prompt sizing", []string{"sweep", "--trace", tr, "--slo", "ttft=1s", "--simulate", "--prompt-sizing", "calibrate"}, "--prompt-sizing"},
		{"sweep simulate HTTP faults", []string{"sweep", "--trace", tr, "--slo", "ttft=1s", "--simulate", "--faults", "status-503=0.1"}, "status-503"},
		{"sweep replicas over HTTP", []string{"sweep", "--trace", tr, "--slo", "ttft=1s", "--replicas", "2"}, "--simulate"},
		// gen
		{"gen rate-end without a ramp", []string{"gen", "--rate-end", "4"}, "--rate-end"},
		{"gen print-spec with out", []string{"gen", "--print-spec", "--out", "x.jsonl"}, "--out"},
		// import
		{"import rate for azure", []string{"import", "--format", "azure", "--rate", "3", "in.csv"}, "--rate"},
		{"import tpot for mooncake", []string{"import", "--format", "mooncake", "--tpot-ms", "20", "in.jsonl"}, "--tpot-ms"},
		{"import tpot not positive", []string{"import", "--format", "weka", "--tpot-ms", "0", "../../traces/testdata/import/weka.jsonl"}, "--tpot-ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			app := newTestApp(nil)
			if code := app.cli(c.args...); code == 0 {
				t.Fatalf("%v: exit 0, want an error naming %s", c.args, c.want)
			}
			if msg := app.err.String(); !strings.Contains(msg, c.want) {
				t.Errorf("%v: error %q does not name %s", c.args, msg, c.want)
			}
		})
	}
}
