package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
		"-rounds", "4", "-kinds", "bench", "-bench-args", "--quick --streams 100 --dispatch-step 100ms", "-json", jsonOut}, &stdout, &stderr)
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
