package main

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
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

// TestInterruptedTwiceReport: a run stopped by two SIGINTs (exit 130 at once, no summary) is
// rebuilt by `llmbench report DIR` from the run facts it wrote at start and its records.
func TestInterruptedTwiceReport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	cmd, exited, output, out, ids := startChild(t, "k")
	for i := 0; i < 2; i++ {
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			waitFor(t, 30*time.Second, "the child to acknowledge the first SIGINT", func() bool {
				return strings.Contains(output.String(), "interrupt: stopped sending")
			})
		}
	}
	err := <-exited
	exited <- err
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("child after two SIGINTs: %v, want 130\n%s", err, output.String())
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err == nil {
		t.Skip("the child wrote its summary before the second SIGINT landed; nothing to rebuild")
	}
	recs, rerr := metrics.ReadRecords(filepath.Join(out, "requests.msgpack"))
	if rerr != nil && !errors.Is(rerr, metrics.ErrTruncated) {
		t.Fatal(rerr)
	}
	app := newTestApp(nil)
	runExpect(t, app, exitOK, "report", out)
	s := readSummaryStruct(t, out)
	if s.Requests.Total != len(recs) || !s.Run.Interrupted || s.Run.TraceFingerprint == nil || s.Run.TraceFingerprint.Requests != len(ids) {
		t.Errorf("rebuilt summary: %d requests (records %d), interrupted %v, fingerprint %+v", s.Requests.Total, len(recs), s.Run.Interrupted, s.Run.TraceFingerprint)
	}
	if len(s.Warnings) == 0 || !strings.Contains(s.Warnings[0], "rebuilt from requests.msgpack") {
		t.Errorf("warnings %v", s.Warnings)
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Error(err)
	}
}

// TestCompareLikeWithLike: results of different traces are refused with exit 2 naming both;
// --allow-different-trace compares them unpaired; results of one trace on two GPUs list the
// GPU among the configuration differences in every format, and each side carries its run
// facts (model, mode).
func TestCompareLikeWithLike(t *testing.T) {
	dir := t.TempDir()
	sim := func(name, trace string, extra ...string) string {
		out := filepath.Join(dir, name)
		runExpect(t, newTestApp(nil), exitOK, append([]string{"simulate", "--trace", trace, "--out", out, "--max-requests", "40"}, extra...)...)
		return out
	}
	h100 := sim("h100", chatSmall)
	a100 := sim("a100", chatSmall, "--gpu", "a100")
	other := sim("other", "../../traces/examples/mixed-small.jsonl")

	app := newTestApp(nil)
	runExpect(t, app, exitBadInput, "compare", h100, other)
	if msg := app.err.String(); !strings.Contains(msg, h100) || !strings.Contains(msg, other) || !strings.Contains(msg, "different traces") || !strings.Contains(msg, "--allow-different-trace") {
		t.Errorf("refusal does not name both sides and the way out: %s", msg)
	}
	app = newTestApp(nil)
	runExpect(t, app, exitOK, "compare", h100, other, "--allow-different-trace", "--format", "json")
	var c metrics.Comparison
	if err := json.Unmarshal([]byte(app.out.String()), &c); err != nil {
		t.Fatal(err)
	}
	if c.Paired || !strings.Contains(strings.Join(c.Warnings, "\n"), "different traces") {
		t.Errorf("allowed different traces: paired %v, warnings %v", c.Paired, c.Warnings)
	}

	app = newTestApp(nil)
	runExpect(t, app, exitOK, "compare", h100, a100, "--format", "json")
	c = metrics.Comparison{}
	if err := json.Unmarshal([]byte(app.out.String()), &c); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range c.ConfigDiff {
		if d.Key == "engine.gpu" && d.Base == "h100-sxm" && d.Cand == "a100-80gb" {
			found = true
		}
		if d.Key == "endpoint" || d.Key == "flag.out" || strings.HasPrefix(d.Key, "trace") {
			t.Errorf("not a configuration difference: %+v", d)
		}
	}
	if !found {
		t.Errorf("config differences %+v do not name the GPU", c.ConfigDiff)
	}
	if c.Base.Summary.Run.Model == "" || c.Cand.Summary.Run.Mode != "simulated" {
		t.Errorf("each side: base model %q, cand mode %q", c.Base.Summary.Run.Model, c.Cand.Summary.Run.Mode)
	}
	html := filepath.Join(dir, "cmp.html")
	for _, format := range []string{"text", "markdown"} {
		app = newTestApp(nil)
		runExpect(t, app, exitOK, "compare", h100, a100, "--format", format, "--html", html)
		if !strings.Contains(app.out.String(), "engine.gpu: h100-sxm → a100-80gb") {
			t.Errorf("%s output does not list the GPU difference:\n%s", format, app.out.String())
		}
	}
	page, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(page), "Configuration differences") || !strings.Contains(string(page), "a100-80gb") {
		t.Errorf("HTML report lacks the configuration differences (%v)", err)
	}
}
