package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/runner"
)

// TestCapacityFlagsRefuseBadInput: a server template without {port}, a grid key the template
// does not use, a grid without a template and the saturation flags where they cannot act are
// refused with an error that names them, before any server or run starts.
func TestCapacityFlagsRefuseBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"template without port", []string{"sweep", "--trace", chatSmall, "--slo", "ttft=1s", "--serve-cmd", "llmbench serve --max-num-seqs {seqs}", "--grid", "seqs=2,4"}, "has no {port}"},
		{"grid key unused", []string{"sweep", "--trace", chatSmall, "--slo", "ttft=1s", "--serve-cmd", "llmbench serve --addr 127.0.0.1:{port}", "--grid", "seqs=2,4"}, "does not use {seqs}"},
		{"placeholder without grid", []string{"sweep", "--trace", chatSmall, "--slo", "ttft=1s", "--serve-cmd", "llmbench serve --addr 127.0.0.1:{port} --max-num-seqs {seqs}"}, "uses {seqs}, which no --grid defines"},
		{"grid without template", []string{"sweep", "--trace", chatSmall, "--slo", "ttft=1s", "--grid", "seqs=2,4"}, "--grid varies the servers of --serve-cmd"},
		{"bad grid", []string{"sweep", "--trace", chatSmall, "--slo", "ttft=1s", "--serve-cmd", "s {port} {seqs}", "--grid", "seqs=2;rm"}, "--grid"},
		{"serve-cmd and endpoint", []string{"sweep", "--trace", chatSmall, "--slo", "ttft=1s", "--serve-cmd", "s {port}", "--endpoint", "http://127.0.0.1:1"}, "--endpoint"},
		{"stop with simulate", []string{"sweep", "--trace", chatSmall, "--slo", "ttft=1s", "--simulate", "--stop-on-saturation"}, "--stop-on-saturation"},
		{"stop with closed-loop sweep", []string{"sweep", "--trace", chatSmall, "--slo", "ttft=1s", "--by-concurrency", "--stop-on-saturation"}, "cannot over-saturate"},
		{"stop with closed-loop run", []string{"run", "--trace", chatSmall, "--concurrency", "2", "--stop-on-saturation"}, "cannot over-saturate"},
		{"zero min time", []string{"run", "--trace", chatSmall, "--saturation-min-time", "0s"}, "--saturation-min-time"},
	}
	for _, c := range cases {
		app := newTestApp(nil)
		code := app.cli(append(c.args, "--out", out, "--no-progress")...)
		if code != exitBadInput || !strings.Contains(app.err.String(), c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", c.name, code, app.err.String(), c.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused command wrote %s (%v)", out, err)
	}
}

// TestSweepServeCmdParetoWithServe sweeps two configurations of `llmbench serve` (this test
// binary as the CLI, TestReliabilityCLIChild), each started on its own port, swept at two
// loads and stopped by SIGTERM: one directory per configuration with its sweep and its
// server's log, and pareto.json and pareto.html with the frontier. (--lag-limit: on a shared
// CI machine the client's schedule lag would mark every point limited, and a limited point is
// never on the frontier.)
func TestSweepServeCmdParetoWithServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	out := filepath.Join(t.TempDir(), "pareto")
	serve := `GORACE=atexit_sleep_ms=0 LLMBENCH_CLI_CHILD=1 LLMBENCH_CLI_ARGS='["serve","--addr","127.0.0.1:{port}","--max-num-seqs","{seqs}","--time-scale","20"]' ` +
		os.Args[0] + " -test.run=^TestReliabilityCLIChild$ -test.count=1"
	app := newTestApp(nil)
	code := app.cli("sweep", "--trace", chatSmall, "--slo", "ttft=2s,tpot=100ms", "--points", "20,40", "--min-duration", "2s", "--lag-limit", "1s",
		"--serve-cmd", serve, "--grid", "seqs=2,16", "--serve-start-timeout", "60s", "--serve-stop-timeout", "20s", "--out", out, "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, app.out.String(), app.err.String())
	}
	var res runner.ServerSweepResult
	b, err := os.ReadFile(filepath.Join(out, "pareto.json"))
	if err != nil || json.Unmarshal(b, &res) != nil {
		t.Fatalf("pareto.json: %v %s", err, b)
	}
	if len(res.Configs) != 2 {
		t.Fatalf("configs %+v", res.Configs)
	}
	for _, c := range res.Configs {
		if c.Error != "" || c.Stopped != "stopped by SIGTERM" {
			t.Errorf("%s: %+v", c.Name, c)
		}
		for _, f := range []string{"sweep.json", "server.log", "rate-20/summary.json", "rate-40/summary.json"} {
			if _, err := os.Stat(filepath.Join(c.Dir, f)); err != nil {
				t.Errorf("%s: %v", c.Name, err)
			}
		}
	}
	frontier := 0
	for _, p := range res.Points {
		if !p.Dominated {
			frontier++
		}
	}
	if len(res.Points) == 0 || frontier == 0 {
		t.Errorf("points %+v", res.Points)
	}
	if page, err := os.ReadFile(filepath.Join(out, "pareto.html")); err != nil || !strings.Contains(string(page), "<svg") {
		t.Errorf("pareto.html: %v", err)
	}
	if s := app.out.String(); !strings.Contains(s, "frontier (output tok/s per GPU against per user") || !strings.Contains(s, "seqs=16") {
		t.Errorf("stdout %s", s)
	}
}
