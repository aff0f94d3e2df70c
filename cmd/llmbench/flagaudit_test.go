package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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
		{"report open without html", []string{"report", t.TempDir(), "--format", "csv", "--open"}, "--open"},
		// compare
		{"compare echarts without html", []string{"compare", t.TempDir(), t.TempDir(), "--echarts-js", "e.js"}, "--echarts-js"},
		{"compare unknown format", []string{"compare", t.TempDir(), t.TempDir(), "--format", "yaml"}, "--format"},
		// ab
		{"ab repeat instead of runs", []string{"ab", "--trace", tr, "--repeat", "3"}, "--runs"},
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
		{"gen cancel with a quality probe", []string{"gen", "--preset", "json-output", "--cancel", "0.1:500"}, "--cancel"}, // flags_cancel.go
		{"gen cancel share out of range", []string{"gen", "--cancel", "1.5:500"}, "--cancel"},
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

// walkCommands calls f for every command of the tree under root, root excluded, by its path
// without the leading "llmbench ".
func walkCommands(root *cobra.Command, f func(path string, c *cobra.Command)) {
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		f(strings.TrimPrefix(c.CommandPath(), "llmbench "), c)
		walkCommands(c, f)
	}
}

// TestLongRunningCommandsAcceptQuiet: every command of longRunning exists and accepts
// --no-progress and --quiet (-q) as booleans, and no other command has --no-progress (a command
// with a progress display is long-running by definition).
func TestLongRunningCommandsAcceptQuiet(t *testing.T) {
	root := newRootCmd(&newTestApp(nil).App)
	long := map[string]bool{}
	for _, p := range longRunning {
		long[p] = true
		c, _, err := root.Find(strings.Fields(p))
		if err != nil || c == root || strings.TrimPrefix(c.CommandPath(), "llmbench ") != p {
			t.Errorf("longRunning names %q, which is not a command", p)
		}
	}
	walkCommands(root, func(path string, c *cobra.Command) {
		np, q := c.Flags().Lookup("no-progress"), c.Flags().Lookup("quiet")
		if !long[path] {
			if np != nil {
				t.Errorf("%s has --no-progress but is not in longRunning (quiet.go)", path)
			}
			return
		}
		if np == nil || np.Value.Type() != "bool" {
			t.Errorf("%s: no boolean --no-progress", path)
		}
		if q == nil || q.Value.Type() != "bool" || q.Shorthand != "q" {
			t.Errorf("%s: no boolean --quiet/-q", path)
		}
	})
}

// TestQuietAndNoProgress: simulate shows its progress on stderr (a plain line off a terminal),
// --no-progress hides it and nothing else, --quiet leaves stderr empty with the results on
// stdout unchanged, and the error that ends a command still shows under --quiet.
func TestQuietAndNoProgress(t *testing.T) {
	dir := t.TempDir()
	outputs := map[string]string{}
	for _, c := range []struct {
		name     string
		extra    []string
		progress bool
		empty    bool
	}{
		{"default", nil, true, false},
		{"no-progress", []string{"--no-progress"}, false, false},
		{"quiet", []string{"--quiet"}, false, true},
		{"q", []string{"-q", "--no-progress"}, false, true},
	} {
		app := newTestApp(nil)
		args := append([]string{"simulate", "--trace", chatSmall, "--out", filepath.Join(dir, c.name)}, c.extra...)
		if code := app.cli(args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, app.err.String())
		}
		stderr := app.err.String()
		if got := strings.Contains(stderr, "virtual ") && strings.Contains(stderr, "96/96 done"); got != c.progress {
			t.Errorf("%s: progress shown %v, want %v; stderr:\n%s", c.name, got, c.progress, stderr)
		}
		if c.empty && stderr != "" {
			t.Errorf("%s: stderr not empty:\n%s", c.name, stderr)
		}
		outputs[c.name] = strings.ReplaceAll(app.out.String(), filepath.Join(dir, c.name), "DIR")
	}
	for name, out := range outputs {
		if out != outputs["default"] {
			t.Errorf("%s: stdout differs from the default's:\n%s\nvs\n%s", name, out, outputs["default"])
		}
	}
	// Neither flag is configuration: a comparison of the runs lists no difference.
	cmp := newTestApp(nil)
	mustRun(t, cmp, "compare", filepath.Join(dir, "default"), filepath.Join(dir, "q"))
	if out := cmp.out.String(); strings.Contains(out, "Configuration differences") || strings.Contains(out, "quiet") || strings.Contains(out, "no-progress") {
		t.Errorf("compare lists --quiet or --no-progress as a configuration difference:\n%s", out)
	}
	app := newTestApp(nil)
	if code := app.cli("simulate", "--trace", filepath.Join(dir, "missing.jsonl"), "--quiet"); code != exitBadInput {
		t.Fatalf("missing trace: exit %d", code)
	}
	if !strings.Contains(app.err.String(), "llmbench:") || !strings.Contains(app.err.String(), "missing.jsonl") {
		t.Errorf("under --quiet the error is not shown: %q", app.err.String())
	}
}
