package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// TestABRepeatsAuto: with a loose rule two repeats suffice; with a rule no interval can meet,
// the experiment stops at --max-repeats and says so.
func TestABRepeatsAuto(t *testing.T) {
	for _, tc := range []struct {
		rule, max string
		want      int
		reason    string
	}{
		{"tpot.p50>+50%", "4", 2, "narrower than its limit"},
		{"tpot.p50>+0.0001%", "3", 3, "stopped at --max-repeats 3"},
	} {
		out := t.TempDir()
		app := newTestApp(nil)
		code := app.cli("ab", "--trace", chatSmall, "--time-scale", "20", "--repeats", "auto", "--max-repeats", tc.max,
			"--fail-on", tc.rule, "--warmup-requests", "2", "--max-requests", "20", "--out", out, "--no-progress")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", tc.rule, code, app.err.String())
		}
		res := readAB(t, out)
		if res.Repeats != tc.want || len(res.Dirs["A"]) != tc.want || !strings.Contains(res.StopReason, tc.reason) {
			t.Errorf("%s: %d repeats (%d dirs), reason %q; want %d and %q", tc.rule, res.Repeats, len(res.Dirs["A"]), res.StopReason, tc.want, tc.reason)
		}
		if !strings.Contains(app.out.String(), "Repeats: ") {
			t.Errorf("%s: the output does not say why it stopped:\n%s", tc.rule, app.out.String())
		}
	}
	app := newTestApp(nil)
	if code := app.cli("ab", "--trace", chatSmall, "--repeats", "auto"); code != 2 || !strings.Contains(app.err.String(), "needs --fail-on") {
		t.Errorf("--repeats auto without --fail-on: exit %d, %s", code, app.err.String())
	}
	if code := app.cli("ab", "--trace", chatSmall, "--repeats", "many"); code != 2 {
		t.Errorf("--repeats many: exit %d", code)
	}
}

// TestABH100ToA100Regresses: moving arm B to an A100 (60% of the H100's memory bandwidth)
// slows decoding far past a 5% rule, and ab exits 1.
func TestABH100ToA100Regresses(t *testing.T) {
	out := t.TempDir()
	app := newTestApp(nil)
	code := app.cli("ab", "--trace", chatSmall, "--b-engine", "gpu=a100", "--time-scale", "20", "--repeats", "2",
		"--fail-on", "tpot.p50>+5%", "--warmup-requests", "2", "--max-requests", "30", "--out", out, "--no-progress")
	if code != 1 {
		t.Fatalf("H100 -> A100: exit %d, want 1\n%s\n%s", code, app.out.String(), app.err.String())
	}
	res := readAB(t, out)
	if !res.Comparison.Regressed || res.Comparison.Regressions[0] != "tpot.p50" {
		t.Fatalf("regressions %v", res.Comparison.Regressions)
	}
}
