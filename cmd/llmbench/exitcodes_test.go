package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runExpect runs the CLI and fails the test unless it exits with want.
func runExpect(t *testing.T, app *testApp, want int, args ...string) {
	t.Helper()
	if code := app.cli(args...); code != want {
		t.Fatalf("llmbench %s: exit %d, want %d\nstderr:\n%s", strings.Join(args, " "), code, want, app.err.String())
	}
}

// TestExitCodes: a run in which every request failed exits 3 (after writing its results), a
// failure share above --max-failure-rate exits 3, bad input exits 2.
func TestExitCodes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	trace, _ := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "x", n: 10, spacing: 100 * time.Millisecond, in: 16, out: 8})

	app := newTestApp(nil)
	out := filepath.Join(dir, "closed")
	runExpect(t, app, exitRunFailed, "run", "--trace", trace, "--out", out, "--endpoint", closed, "--model", "m", "--rate-scale", "20", "--no-progress")
	if !strings.Contains(app.err.String(), "no request succeeded (10 of 10 failed") {
		t.Errorf("stderr does not say why the run failed: %s", app.err.String())
	}
	if s := readSummaryStruct(t, out); s.Requests.Failed != 10 {
		t.Errorf("summary of the failed run: %+v", s.Requests)
	}

	// Half the requests fail: fine by default, a failed run past --max-failure-rate 0.1.
	for _, tc := range []struct {
		rate string
		want int
	}{{"1", exitOK}, {"0.1", exitRunFailed}} {
		app := newTestApp(nil)
		runExpect(t, app, tc.want, "run", "--trace", trace, "--out", filepath.Join(dir, "half"+tc.rate), "--time-scale", "20",
			"--no-progress", "--faults", "status-500=0.5,seed=2", "--max-failure-rate", tc.rate)
	}
	app = newTestApp(nil)
	runExpect(t, app, exitBadInput, "run", "--trace", trace, "--max-failure-rate", "2")
	runExpect(t, app, exitBadInput, "run", "--no-such-flag")
	runExpect(t, app, exitBadInput, "compare", dir, filepath.Join(dir, "missing"))
}
