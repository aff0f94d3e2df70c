package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/racebuild"
	"github.com/llmbench/llmbench/metrics"
)

// quietMachine skips a test that compares wall-clock rates unless it runs in .ci/run's quiet
// pass (LLMBENCH_QUIET_TESTS=1, one package at a time), where nothing else competes for the
// CPUs; .ci/run finds it by this call.
func quietMachine(t *testing.T) {
	t.Helper()
	if os.Getenv(racebuild.SecondPassEnv) == "" {
		t.Skip("compares wall-clock rates: runs in .ci/run's quiet pass (LLMBENCH_QUIET_TESTS=1, -p 1)")
	}
}

// buildLLMBench builds cmd/llmbench from this tree into out with the extra go build args.
func buildLLMBench(t *testing.T, out string, args ...string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	cmd := exec.Command(goBin, append(append([]string{"build", "-o", out}, args...), "./cmd/llmbench")...)
	cmd.Dir = filepath.Join("..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", args, err, b)
	}
}

// TestGateFailsASlowedBuild runs the gate end to end on two real builds of this tree: the
// plain one as the baseline and one built with -tags perfgate_slow as the head, whose loadgen
// burns CPU on every streamed chunk (loadgen/perfgate_slow.go). Four rounds of a short bench
// each: the gate exits 1 and names ingest_tokens_per_s as regressed, and its JSON holds every
// round. It compares wall-clock rates, so it runs in .ci/run's quiet pass; -short skips it.
func TestGateFailsASlowedBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds llmbench twice and benchmarks both builds: skipped with -short")
	}
	quietMachine(t)
	dir := t.TempDir()
	plain, slow := filepath.Join(dir, "llmbench"), filepath.Join(dir, "llmbench-slow")
	buildLLMBench(t, plain)
	buildLLMBench(t, slow, "-tags", "perfgate_slow")
	var stdout, stderr bytes.Buffer
	jsonOut := filepath.Join(dir, "perf.json")
	code := cli(context.Background(), []string{"-base", plain, "-head", slow, "-base-label", "plain", "-head-label", "perfgate_slow",
		"-rounds", "4", "-kinds", "bench", "-bench-args", "--quick --streams 100 --dispatch-step 100ms --ingest-tokens 500000", "-json", jsonOut}, &stdout, &stderr)
	t.Logf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	if code != 1 {
		t.Fatalf("the gate exited %d on a build slowed by construction, want 1", code)
	}
	if !strings.Contains(stdout.String(), "perf gate FAILED: ") || !strings.Contains(stdout.String(), "ingest_tokens_per_s") {
		t.Errorf("the output does not name the regression:\n%s", stdout.String())
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Rounds  []round `json:"rounds"`
		Verdict verdict `json:"verdict"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Rounds) != 4 {
		t.Errorf("%d rounds in the JSON, want 4", len(got.Rounds))
	}
	for _, r := range got.Verdict.Rows {
		if r.Figure == "ingest_tokens_per_s" && (r.Verdict != metrics.VerdictRegressed || r.Ratio > 0.9) {
			t.Errorf("ingest: verdict %q, ratio %.3f: want regressed, well below 1", r.Verdict, r.Ratio)
		}
	}
}

// TestCLIRefusesBadOptions: the gate says what is wrong and exits 2 before measuring.
func TestCLIRefusesBadOptions(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-head", exe}, "-base and -head"},
		{[]string{"-base", exe, "-head", exe, "-rounds", "3"}, "an even number"},
		{[]string{"-base", exe, "-head", exe, "-kinds", "bench,gpu"}, `"gpu" is not one of`},
		{[]string{"-base", exe, "-head", exe, "-kinds", "sim,bench,sim"}, `"sim" twice`},
		{[]string{"-base", exe, "-head", t.TempDir()}, "not an executable file"},
		{[]string{"-base", exe, "-head", exe, "-sim-requests", "0"}, "-sim-requests"},
		{[]string{"-base", exe, "-head", exe, "extra"}, "unexpected arguments"},
	} {
		var stdout, stderr bytes.Buffer
		if code := cli(context.Background(), c.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}

// scripted writes an executable standing in for an llmbench build: it logs each call to
// calls.log in dir, prints bench JSON whose ingest rate is ingest times 1.00, 1.01 or 1.02 in
// turn from phase (a little noise), and for simulate and gen writes what they would. omit
// leaves a key out of bench's JSON.
func scripted(t *testing.T, dir, name string, ingest float64, phase int, omit string) string {
	t.Helper()
	bench := `{"dispatch_req_per_s": 12000, "ingest_tokens_per_s": INGEST, "arrival_error_p99_ms": 0.5, "cores": 2, "load_average_1m": [0.5, 0.7], "cpu_steal_fraction": 0}`
	if omit != "" {
		bench = strings.Replace(bench, `"`+omit+`": `, `"renamed": `, 1)
	}
	script := `#!/usr/bin/env bash
set -e
echo "NAME $*" >> "DIR/calls.log"
case "$1 $2 $3" in
  "bench --scenario long-streams")
    echo '{"points": [{"streams": 1000, "failed": 0, "lag_p99_ms": 0.7, "arrival_error_p99_ms": 0.8, "rss_per_stream_kb": 38, "wake_floor_p99_ms": 0.1, "cpu_steal_fraction": 0}], "cores": 2, "load_average_1m": [1, 1]}' ;;
  bench*)
    n=$(cat "DIR/NAME.count" 2>/dev/null || echo 0); echo $((n + 1)) > "DIR/NAME.count"
    INGEST=$(awk -v b=BASE -v n="$((n + PHASE))" 'BEGIN { print b * (1 + (n % 3) / 100) }')
    echo 'BENCH' ;;
  gen*)
    for a in "$@"; do [ "$prev" = -o ] && echo '{"id":"r1","arrival_s":0,"input_tokens":1,"output_tokens":1}' > "$a"; prev=$a; done ;;
  simulate*)
    for a in "$@"; do [ "$prev" = -o ] && mkdir -p "$a"; prev=$a; done ;;
esac
`
	script = strings.NewReplacer("NAME", name, "DIR", dir, "BASE", fmt.Sprint(ingest), "PHASE", fmt.Sprint(phase),
		"BENCH", strings.Replace(bench, "INGEST", "'\"$INGEST\"'", 1)).Replace(script)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGateOnScriptedBuilds drives the gate's whole Go part against scripted builds: the
// overload trace is made once with the baseline's gen, the rounds alternate which build goes
// first for every kind, a head whose ingest rate is half the base's fails the gate with exit 1
// naming ingest, the same figures on both sides pass, and a key a build leaves out of its
// JSON stops the gate with exit 2 instead of being read as 0.
func TestGateOnScriptedBuilds(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not on PATH")
	}
	dir := t.TempDir()
	base := scripted(t, dir, "base", 1e6, 0, "")
	slow := scripted(t, dir, "slow", 5e5, 1, "")
	same := scripted(t, dir, "same", 1e6, 2, "")
	args := func(head string) []string {
		return []string{"-base", base, "-head", head, "-rounds", "4", "-sim-requests", "10", "-trace-dir", dir}
	}
	var stdout, stderr bytes.Buffer
	if code := cli(context.Background(), append(args(slow), "-json", filepath.Join(dir, "perf.json")), &stdout, &stderr); code != 1 {
		t.Fatalf("half the ingest rate: exit %d, want 1\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "perf gate FAILED: ingest_tokens_per_s") {
		t.Errorf("the output does not name ingest:\n%s", stdout.String())
	}
	// Each figure's verdict (the simulate figures are the scripts' own wall time and RSS: not
	// asserted).
	var got struct {
		Verdict verdict `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "perf.json"))), &got); err != nil {
		t.Fatal(err)
	}
	for _, r := range got.Verdict.Rows {
		want := metrics.VerdictUnchanged
		switch r.Figure {
		case "ingest_tokens_per_s":
			want = metrics.VerdictRegressed
		case "sim_wall_s", "sim_peak_rss_mb":
			continue
		}
		if r.Verdict != want {
			t.Errorf("%s: verdict %q, want %q", r.Figure, r.Verdict, want)
		}
	}
	calls, err := os.ReadFile(filepath.Join(dir, "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, line := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
		f := strings.Fields(line)
		kind := f[1]
		if len(f) > 3 && f[3] == "long-streams" {
			kind = "long"
		}
		order = append(order, f[0]+" "+kind)
	}
	ab := []string{"base bench", "slow bench", "base long", "slow long", "base simulate", "slow simulate"}
	ba := []string{"slow bench", "base bench", "slow long", "base long", "slow simulate", "base simulate"}
	want := append([]string{"base gen"}, slices.Concat(ab, ba, ab, ba)...)
	if !slices.Equal(order, want) {
		t.Errorf("calls\n%s\nwant\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(filepath.Join(dir, traceName(10))); err != nil {
		t.Errorf("the overload trace was not kept: %v", err)
	}

	stdout.Reset()
	// A/A on the figures the scripts print (their own wall time left out: -kinds bench,long).
	if code := cli(context.Background(), append(args(same), "-kinds", "bench,long"), &stdout, &stderr); code != 0 {
		t.Errorf("A/A: exit %d, want 0\n%s", code, stdout.String())
	}
	if n := strings.Count(readFile(t, filepath.Join(dir, "calls.log")), "base gen"); n != 1 {
		t.Errorf("the trace was made %d times, want once (kept in -trace-dir)", n)
	}

	stderr.Reset()
	renamed := scripted(t, dir, "renamed", 1e6, 0, "ingest_tokens_per_s")
	if code := cli(context.Background(), args(renamed), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "no ingest_tokens_per_s in its output") {
		t.Errorf("a key left out: exit %d, stderr %q; want 2 naming the key", code, stderr.String())
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
