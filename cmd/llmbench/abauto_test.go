package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/racebuild"
	"github.com/llmbench/llmbench/runner"
)

func readAB(t *testing.T, out string) runner.ABResult {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, "ab.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res runner.ABResult
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestABRepeatsAuto: with a loose rule the experiment stops as soon as the interval is
// narrower than the limit (a few repeats, fewer on a quiet machine); with a rule no interval
// can meet, it stops at --max-runs and says so.
func TestABRepeatsAuto(t *testing.T) {
	racebuild.Heavy(t)
	for _, tc := range []struct {
		rule, max   string
		least, most int
		reason      string
	}{
		{"tpot.p50>+50%", "6", 2, 5, "narrower than its limit"},
		{"tpot.p50>+0.0001%", "3", 3, 3, "stopped at --max-runs 3"},
	} {
		out := t.TempDir()
		app := newTestApp(nil)
		code := app.cli("ab", "--trace", chatSmall, "--time-scale", "20", "--runs", "auto", "--max-runs", tc.max,
			"--fail-on", tc.rule, "--warmup-requests", "2", "--max-requests", "20", "--out", out, "--no-progress")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", tc.rule, code, app.err.String())
		}
		res := readAB(t, out)
		if res.Repeats < tc.least || res.Repeats > tc.most || len(res.Dirs["A"]) != res.Repeats || !strings.Contains(res.StopReason, tc.reason) {
			t.Errorf("%s: %d repeats (%d dirs), reason %q; want %d to %d and %q", tc.rule, res.Repeats, len(res.Dirs["A"]), res.StopReason, tc.least, tc.most, tc.reason)
		}
		if ok, why := runner.NarrowEnough(res.Comparison); ok != (tc.least < tc.most) {
			t.Errorf("%s: the final comparison is narrow enough = %v (%s)", tc.rule, ok, why)
		}
		if !strings.Contains(app.out.String(), "Repeats: ") {
			t.Errorf("%s: the output does not say why it stopped:\n%s", tc.rule, app.out.String())
		}
	}
	app := newTestApp(nil)
	if code := app.cli("ab", "--trace", chatSmall, "--runs", "auto"); code != 2 || !strings.Contains(app.err.String(), "needs --fail-on") {
		t.Errorf("--runs auto without --fail-on: exit %d, %s", code, app.err.String())
	}
	if code := app.cli("ab", "--trace", chatSmall, "--runs", "many"); code != 2 {
		t.Errorf("--runs many: exit %d", code)
	}
}

// TestABH100ToA100Regresses: moving arm B to an A100 (60% of the H100's memory bandwidth)
// slows decoding far past a 5% rule, and ab exits 1. On a machine too busy to keep the
// schedule (the summary says client-limited) the numbers are not valid and the test skips.
func TestABH100ToA100Regresses(t *testing.T) {
	quietMachine(t)
	out := t.TempDir()
	app := newTestApp(nil)
	code := app.cli("ab", "--trace", chatSmall, "--b-engine", "gpu=a100", "--time-scale", "5", "--runs", "2",
		"--fail-on", "tpot.p50>+5%", "--warmup-requests", "2", "--max-requests", "24", "--out", out, "--no-progress")
	if code == 0 && strings.Contains(app.out.String(), "client-limited") {
		t.Skipf("the client could not keep the schedule (busy machine), so ab rightly judged nothing:\n%s", app.out.String())
	}
	if code != 1 {
		t.Fatalf("H100 -> A100: exit %d, want 1\n%s\n%s", code, app.out.String(), app.err.String())
	}
	res := readAB(t, out)
	if !res.Comparison.Regressed || res.Comparison.Regressions[0] != "tpot.p50" {
		t.Fatalf("regressions %v", res.Comparison.Regressions)
	}
}
