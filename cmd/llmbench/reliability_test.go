package main

// Issue 9 acceptance tests that need the whole CLI: every fault the reference engine can
// inject, run through the harness end to end; interrupts; kill -9 mid-run; truncated and
// corrupt inputs. They run the CLI in-process (execute over buffers) against the embedded
// engine sped up with --time-scale, on small traces written into t.TempDir(), except the
// kill -9 test, which re-executes this test binary as the CLI (see TestReliabilityCLIChild).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/traces"
)

// traceSpec describes a small synthetic trace: n requests spaced evenly.
type traceSpec struct {
	prefix  string
	n       int
	spacing time.Duration
	in, out int
}

// writeTrace writes spec as JSONL into dir/name and returns the path and the request ids.
func writeTrace(t *testing.T, dir, name string, spec traceSpec) (string, []string) {
	t.Helper()
	var b strings.Builder
	ids := make([]string, spec.n)
	for i := range spec.n {
		ids[i] = fmt.Sprintf("%s%03d", spec.prefix, i)
		fmt.Fprintf(&b, `{"id":%q,"arrival_s":%s,"input_tokens":%d,"output_tokens":%d}`+"\n",
			ids[i], strconv.FormatFloat((time.Duration(i)*spec.spacing).Seconds(), 'f', -1, 64), spec.in, spec.out)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, ids
}

// mustRun runs the CLI and fails the test unless it exits 0.
func mustRun(t *testing.T, app *testApp, args ...string) {
	t.Helper()
	if code := app.cli(args...); code != 0 {
		t.Fatalf("llmbench %s: exit %d\nstderr:\n%s", strings.Join(args, " "), code, app.err.String())
	}
}

// readSummaryStruct decodes dir/summary.json into the contract type.
func readSummaryStruct(t *testing.T, dir string) *metrics.Summary {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s metrics.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	return &s
}

// checkRunInvariants asserts what every completed run must satisfy, faults or not: one record
// per trace request, summary counts that add up and match the records, and latency
// distributions built from successful requests only. It returns the records by id.
func checkRunInvariants(t *testing.T, dir string, ids []string) (map[string]metrics.Record, *metrics.Summary) {
	t.Helper()
	recs, err := metrics.ReadRecords(filepath.Join(dir, "requests.msgpack"))
	if err != nil {
		t.Fatalf("requests.msgpack: %v", err)
	}
	byID := make(map[string]metrics.Record, len(recs))
	for _, r := range recs {
		if _, dup := byID[r.ID]; dup {
			t.Errorf("request %s has more than one record", r.ID)
		}
		byID[r.ID] = r
	}
	for _, id := range ids {
		if _, ok := byID[id]; !ok {
			t.Errorf("request %s has no record", id)
		}
	}
	if len(recs) != len(ids) {
		t.Errorf("requests.msgpack has %d records for %d trace requests", len(recs), len(ids))
	}
	// summary.json and report.html are written through a temporary file and a rename;
	// none may be left behind.
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") || strings.Contains(e.Name(), ".tmp") {
				t.Errorf("results directory holds a leftover temporary file %s", e.Name())
			}
		}
	}

	s := readSummaryStruct(t, dir)
	rq := s.Requests
	if rq.Succeeded+rq.Failed+rq.Dropped != rq.Total || rq.Total != len(recs) {
		t.Errorf("summary: succeeded %d + failed %d + dropped %d != total %d (records %d)", rq.Succeeded, rq.Failed, rq.Dropped, rq.Total, len(recs))
	}
	kinds := map[string]int{}
	statuses := map[string]int{}
	ok := 0
	var okE2E []float64
	for _, r := range recs {
		if r.OK() {
			ok++
			okE2E = append(okE2E, float64(r.End-r.Intended)/1e6)
			continue
		}
		if r.Failure == metrics.FailDropped {
			continue // counted apart from failures (summary.requests.dropped)
		}
		kinds[string(r.Failure)]++
		if r.Status != 0 {
			statuses[strconv.Itoa(r.Status)]++
		}
	}
	if rq.Succeeded != ok {
		t.Errorf("summary succeeded %d, records say %d", rq.Succeeded, ok)
	}
	if !sameCounts(rq.Failures, kinds) {
		t.Errorf("summary failures %v, records say %v", rq.Failures, kinds)
	}
	if !sameCounts(rq.FailStatus, statuses) {
		t.Errorf("summary failures_by_status %v, records say %v", rq.FailStatus, statuses)
	}
	// Failed requests never enter the latency distributions of successful ones.
	for name, d := range map[string]metrics.Dist{"ttft": s.Latency.TTFT, "e2e": s.Latency.E2E, "tpot": s.Latency.TPOT} {
		if d.Count != int64(ok) {
			t.Errorf("latency_ms.%s.count = %d, want succeeded = %d", name, d.Count, ok)
		}
	}
	if len(okE2E) > 0 {
		sort.Float64s(okE2E)
		want := okE2E[len(okE2E)-1]
		// HdrHistogram keeps 3 significant digits; allow 1% and 0.01 ms.
		if got := s.Latency.E2E.Max; math.Abs(got-want) > 0.01*want+0.01 {
			t.Errorf("latency_ms.e2e.max = %.3f ms, the slowest successful request took %.3f ms", got, want)
		}
	}
	return byID, s
}

func sameCounts(a, b map[string]int) bool {
	for k, v := range a {
		if v != 0 && b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// TestReliabilityFaults runs the harness through every fault the reference engine injects and
// checks that the run completes, every request keeps exactly one record with the right failure
// kind (and status, and partial timings where it streamed), and that the summary adds up.
func TestReliabilityFaults(t *testing.T) {
	type check func(t *testing.T, r metrics.Record)
	streamed := func(t *testing.T, r metrics.Record) {
		t.Helper()
		if r.Status != 200 || r.Headers == 0 || r.FirstToken == 0 || len(r.Chunks) == 0 || r.End < r.FirstToken {
			t.Errorf("%s (%s): partial timings lost: status %d headers %d first %d chunks %d end %d",
				r.ID, r.Failure, r.Status, r.Headers, r.FirstToken, len(r.Chunks), r.End)
		}
		if r.OutputTokens == 0 {
			t.Errorf("%s (%s): output tokens of the streamed part not kept", r.ID, r.Failure)
		}
	}
	status := func(code int, msg string) check {
		return func(t *testing.T, r metrics.Record) {
			t.Helper()
			if r.Status != code || r.FirstToken != 0 || r.End == 0 {
				t.Errorf("%s: status %d first %d end %d, want status %d, no token, an end", r.ID, r.Status, r.FirstToken, r.End, code)
			}
			if !strings.Contains(r.Error, msg) {
				t.Errorf("%s: error %q does not keep the server's message %q", r.ID, r.Error, msg)
			}
		}
	}
	noResponse := func(t *testing.T, r metrics.Record) {
		t.Helper()
		if r.Status != 0 || r.Headers != 0 || r.Sent == 0 || r.End < r.Sent {
			t.Errorf("%s (%s): status %d headers %d sent %d end %d, want no response and a send and end time", r.ID, r.Failure, r.Status, r.Headers, r.Sent, r.End)
		}
	}
	cases := []struct {
		name   string
		faults string
		flags  []string
		burst  bool
		kinds  []metrics.FailureKind // allowed failure kinds; nil: every request succeeds
		check  check
	}{
		{name: "reset-before", faults: "reset-before=0.5", kinds: []metrics.FailureKind{metrics.FailConnect}, check: noResponse},
		{name: "reset-mid", faults: "reset-mid=0.5", kinds: []metrics.FailureKind{metrics.FailStreamBroken}, check: streamed},
		{name: "stall-timeout", faults: "stall=0.5:20s", flags: []string{"--timeout-idle", "300ms"},
			kinds: []metrics.FailureKind{metrics.FailTimeoutIdle}, check: streamed},
		{name: "status-429", faults: "status-429=0.5", kinds: []metrics.FailureKind{metrics.FailHTTP429}, check: status(429, "injected fault")},
		{name: "status-500", faults: "status-500=0.5", kinds: []metrics.FailureKind{metrics.FailHTTP5xx}, check: status(500, "injected fault")},
		{name: "status-503", faults: "status-503=0.5", kinds: []metrics.FailureKind{metrics.FailHTTP5xx}, check: status(503, "injected fault")},
		{name: "malformed", faults: "malformed=0.5", kinds: []metrics.FailureKind{metrics.FailMalformed}, check: streamed},
		{name: "bad-json", faults: "bad-json=0.5", kinds: []metrics.FailureKind{metrics.FailMalformed}, check: streamed},
		{name: "no-done", faults: "no-done=0.5", kinds: []metrics.FailureKind{metrics.FailStreamBroken},
			check: func(t *testing.T, r metrics.Record) {
				t.Helper()
				streamed(t, r)
				if r.OutputTokens != r.RequestedTokens {
					t.Errorf("%s: a stream without [DONE] delivered %d of %d tokens; all should be counted", r.ID, r.OutputTokens, r.RequestedTokens)
				}
			}},
		{name: "slow-headers-timeout", faults: "slow-headers=0.5:20s", flags: []string{"--timeout-headers", "300ms"},
			kinds: []metrics.FailureKind{metrics.FailTimeoutHeaders}, check: noResponse},
		// A held request is the server's queue, not an unreachable server: the first-token
		// timeout bounds it and names it timeout_headers; the connect timeout does not.
		{name: "slow-headers-first-token", faults: "slow-headers=0.5:20s", flags: []string{"--timeout-connect", "2s", "--timeout-first-token", "5s"},
			kinds: []metrics.FailureKind{metrics.FailTimeoutHeaders}, check: noResponse},
		{name: "status-500-all", faults: "status-500=1", flags: []string{"--slo", "ttft=1s,tpot=50ms"},
			kinds: []metrics.FailureKind{metrics.FailHTTP5xx}, check: status(500, "injected fault")},
		{name: "overload", faults: "overload=2", flags: []string{"--max-num-seqs", "2"}, burst: true,
			kinds: []metrics.FailureKind{metrics.FailHTTP429}, check: status(429, "overloaded")},
	}
	// The chat API streams a role-only prelude first; mid-stream faults must still keep the
	// content part.
	for _, tc := range cases[:len(cases):len(cases)] {
		switch tc.name {
		case "reset-mid", "malformed", "no-done", "status-503":
			tc.name += "-chat"
			tc.flags = append([]string{"--api", "chat"}, tc.flags...)
			cases = append(cases, tc)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			spec := traceSpec{prefix: "f", n: 30, spacing: 200 * time.Millisecond, in: 64, out: 24}
			if tc.burst {
				spec.spacing = 10 * time.Millisecond
			}
			trace, ids := writeTrace(t, dir, "trace.jsonl", spec)
			out := filepath.Join(dir, "out")
			app := newTestApp(nil)
			args := append([]string{"run", "--trace", trace, "--out", out, "--time-scale", "20", "--no-progress",
				"--faults", tc.faults + ",seed=3"}, tc.flags...)
			want := exitOK
			if tc.name == "status-500-all" {
				want = exitRunFailed // no request succeeded (issue 20)
			}
			runExpect(t, app, want, args...)
			recs, s := checkRunInvariants(t, out, ids)
			if s.Requests.Failed == 0 {
				t.Fatalf("no request failed with --faults %s", tc.faults)
			}
			chat := strings.HasSuffix(tc.name, "-chat")
			for _, id := range ids {
				r := recs[id]
				if chat && r.ResponseID != "" && !strings.HasPrefix(r.ResponseID, "chatcmpl-") {
					t.Errorf("%s: response id %q with --api chat", id, r.ResponseID)
				}
				if r.OK() {
					if r.FirstToken == 0 || r.OutputTokens != r.RequestedTokens {
						t.Errorf("%s succeeded with first token %d and %d of %d tokens", id, r.FirstToken, r.OutputTokens, r.RequestedTokens)
					}
					continue
				}
				allowed := false
				for _, k := range tc.kinds {
					allowed = allowed || r.Failure == k
				}
				if !allowed {
					t.Errorf("%s failed as %q (%s), want one of %v", id, r.Failure, r.Error, tc.kinds)
					continue
				}
				if r.Error == "" {
					t.Errorf("%s failed as %q with no error message", id, r.Failure)
				}
				tc.check(t, r)
			}
		})
	}

	// A stall without an idle timeout is not a failure: the request succeeds and the gap is
	// counted as a stall.
	t.Run("stall-no-timeout", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "s", n: 30, spacing: 200 * time.Millisecond, in: 64, out: 24})
		out := filepath.Join(dir, "out")
		app := newTestApp(nil)
		mustRun(t, app, "run", "--trace", trace, "--out", out, "--time-scale", "20", "--no-progress", "--faults", "stall=0.5:4s,seed=3")
		recs, s := checkRunInvariants(t, out, ids)
		if s.Requests.Failed != 0 {
			t.Fatalf("failures %v with stalls and no idle timeout", s.Requests.Failures)
		}
		stalled := 0
		for _, r := range recs {
			for i := 1; i < len(r.Chunks); i++ {
				if time.Duration(r.Chunks[i].T-r.Chunks[i-1].T) >= 3*time.Second {
					stalled++
					break
				}
			}
		}
		if stalled == 0 {
			t.Fatal("no record shows the injected 4 s stall")
		}
		// Other gaps may pass the 5x-median threshold too (client jitter is magnified 20x).
		if s.Stalls.RequestsWithStall < int64(stalled) {
			t.Errorf("stalls.requests_with_stall = %d, but %d records have a gap of at least 3 s", s.Stalls.RequestsWithStall, stalled)
		}
	})

	// An outage window: every request arriving (in engine time) between 10 s and 20 s gets
	// 503, none outside it. The engine's clock starts a little before the replay, so only
	// requests at least 3 s inside or outside the window are judged.
	t.Run("outage-window", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "w", n: 30, spacing: time.Second, in: 64, out: 16})
		out := filepath.Join(dir, "out")
		app := newTestApp(nil)
		mustRun(t, app, "run", "--trace", trace, "--out", out, "--time-scale", "10", "--no-progress", "--faults", "status-503=1,from=10s,until=20s")
		recs, s := checkRunInvariants(t, out, ids)
		for i, id := range ids {
			r := recs[id]
			switch {
			case i >= 13 && i <= 17 && (r.Failure != metrics.FailHTTP5xx || r.Status != 503):
				t.Errorf("%s (at %d s, inside the outage): failure %q status %d, want http_5xx 503", id, i, r.Failure, r.Status)
			case (i <= 7 || i >= 23) && !r.OK():
				t.Errorf("%s (at %d s, outside the outage): failed %q", id, i, r.Failure)
			}
		}
		if s.Requests.Failures[string(metrics.FailHTTP5xx)] != s.Requests.Failed {
			t.Errorf("failures %v, want only http_5xx", s.Requests.Failures)
		}
	})

	// early-eos: the engine stops early only when ignore_eos was not sent. With the vllm
	// backend (ignore_eos) every request is complete; with the openai backend some are shorter
	// and that is not a failure (only ignore_eos makes a short output one).
	for _, backend := range []string{"vllm", "openai"} {
		t.Run("early-eos-"+backend, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "e", n: 30, spacing: 200 * time.Millisecond, in: 64, out: 24})
			out := filepath.Join(dir, "out")
			app := newTestApp(nil)
			mustRun(t, app, "run", "--trace", trace, "--out", out, "--time-scale", "20", "--no-progress", "--backend", backend, "--faults", "early-eos=0.5,seed=3")
			recs, s := checkRunInvariants(t, out, ids)
			if s.Requests.Failed != 0 {
				t.Fatalf("failures %v", s.Requests.Failures)
			}
			short := 0
			for _, r := range recs {
				if r.OutputTokens < r.RequestedTokens {
					short++
				}
				if r.ServerOutputTokens >= 0 && r.ServerOutputTokens != r.OutputTokens {
					t.Errorf("%s: counted %d tokens, server reported %d", r.ID, r.OutputTokens, r.ServerOutputTokens)
				}
			}
			switch {
			case backend == "vllm" && short != 0:
				t.Errorf("%d requests stopped early although ignore_eos was sent", short)
			case backend == "openai" && short == 0:
				t.Error("no request stopped early with early-eos=0.5 and no ignore_eos")
			}
		})
	}
}

// TestReliabilitySessionFaults: in multi-turn sessions a failed turn ends its session; the
// turns after it are never sent and are recorded as dropped, so every trace request still has
// exactly one record.
func TestReliabilitySessionFaults(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	var ids []string
	const sessions, turns = 12, 4
	for sess := range sessions {
		for turn := 1; turn <= turns; turn++ {
			id := fmt.Sprintf("s%02d-t%d", sess, turn)
			ids = append(ids, id)
			fmt.Fprintf(&b, `{"id":%q,"arrival_s":%g,"input_tokens":48,"output_tokens":12,"session":"s%02d","turn":%d,"think_s":0.2}`+"\n",
				id, float64(sess)*0.3+float64(turn-1)*0.5, sess, turn)
		}
	}
	trace := filepath.Join(dir, "sessions.jsonl")
	if err := os.WriteFile(trace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	app := newTestApp(nil)
	mustRun(t, app, "run", "--trace", trace, "--out", out, "--time-scale", "20", "--no-progress", "--faults", "status-503=0.25,reset-mid=0.1,seed=4")
	recs, _ := checkRunInvariants(t, out, ids)
	cut := 0
	for sess := range sessions {
		failedAt := 0
		for turn := 1; turn <= turns; turn++ {
			r := recs[fmt.Sprintf("s%02d-t%d", sess, turn)]
			switch {
			case failedAt == 0 && !r.OK():
				if r.Failure == metrics.FailDropped {
					t.Errorf("%s dropped although no earlier turn failed: %s", r.ID, r.Error)
				}
				failedAt = turn
			case failedAt > 0:
				if r.Failure != metrics.FailDropped || r.Sent != 0 {
					t.Errorf("%s: %q (sent %d) after turn %d of its session failed; want dropped, never sent", r.ID, r.Failure, r.Sent, failedAt)
				}
				if !strings.Contains(r.Error, "earlier turn") {
					t.Errorf("%s: dropped with reason %q", r.ID, r.Error)
				}
			}
		}
		if failedAt > 0 && failedAt < turns {
			cut++
		}
	}
	if cut == 0 {
		t.Fatal("no session was cut short by a failed turn; the faults did not exercise the rule")
	}
}

// waitFor polls cond every few milliseconds until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recordsSoFar reads what a running (or killed) process has written to requests.msgpack,
// tolerating a partial last frame and a file whose header is not written yet.
func recordsSoFar(path string) int {
	recs, err := metrics.ReadRecords(path)
	if err != nil && !errors.Is(err, metrics.ErrTruncated) {
		return 0
	}
	return len(recs)
}

// TestReliabilityInterrupt: an interrupt ends the run early with complete results marked
// interrupted: every trace request has a record (those never sent as dropped), the summary
// adds up and the report is written.
func TestReliabilityInterrupt(t *testing.T) {
	check := func(t *testing.T, out string, ids []string) {
		t.Helper()
		recs, s := checkRunInvariants(t, out, ids)
		if !s.Run.Interrupted {
			t.Error("summary.json: run.interrupted is false after an interrupt")
		}
		dropped := 0
		for _, r := range recs {
			if r.Failure == metrics.FailDropped {
				dropped++
				if r.Sent != 0 || r.Headers != 0 {
					t.Errorf("%s: dropped but has a send time %d", r.ID, r.Sent)
				}
			}
		}
		if dropped == 0 {
			t.Error("no request was recorded as dropped after an early interrupt")
		}
		if html, err := os.ReadFile(filepath.Join(out, "report.html")); err != nil || !strings.Contains(string(html), "</html>") {
			t.Errorf("report.html missing or incomplete after an interrupt: %v", err)
		}
	}

	// An interrupt that is already pending when the run starts. The embedded engine always
	// discovers its model, so this runs against a reference engine on httptest with --model
	// (no discovery): the interrupt lands in the scheduler.
	t.Run("before-start", func(t *testing.T) {
		t.Parallel()
		srv := startRefEngine(t, refengine.Config{TimeScale: 20})
		dir := t.TempDir()
		trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "i", n: 60, spacing: time.Second, in: 64, out: 16})
		out := filepath.Join(dir, "out")
		app := newTestApp(nil)
		sig := make(chan os.Signal, 1)
		sig <- os.Interrupt
		app.Interrupts = sig
		runExpect(t, app, exitInterrupted, "run", "--trace", trace, "--out", out, "--endpoint", srv.URL, "--model", "llama-3.1-8b",
			"--rate-scale", "20", "--no-progress", "--grace", "2s")
		check(t, out, ids)
	})

	// The same against the embedded engine: the interrupt lands in model discovery.
	t.Run("during-discovery", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "d", n: 60, spacing: time.Second, in: 64, out: 16})
		out := filepath.Join(dir, "out")
		app := newTestApp(nil)
		sig := make(chan os.Signal, 1)
		sig <- os.Interrupt
		app.Interrupts = sig
		if code := app.cli("run", "--trace", trace, "--out", out, "--time-scale", "20", "--no-progress", "--grace", "2s"); code != exitInterrupted {
			t.Fatalf("an interrupt during model discovery aborted the run (exit %d): %s", code, strings.TrimSpace(app.err.String()))
		}
		check(t, out, ids)
	})

	t.Run("after-first-record", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "j", n: 100, spacing: 500 * time.Millisecond, in: 64, out: 16})
		out := filepath.Join(dir, "out")
		app := newTestApp(nil)
		sig := make(chan os.Signal, 2)
		app.Interrupts = sig
		done := make(chan int, 1)
		go func() {
			done <- app.cli("run", "--trace", trace, "--out", out, "--time-scale", "20", "--no-progress", "--grace", "2s")
		}()
		recPath := filepath.Join(out, "requests.msgpack")
		waitFor(t, 20*time.Second, "a first record in requests.msgpack", func() bool {
			select {
			case code := <-done:
				t.Fatalf("run ended (exit %d) before the first record was observed: %s", code, app.err.String())
			default:
			}
			return recordsSoFar(recPath) >= 1
		})
		sig <- os.Interrupt
		select {
		case code := <-done:
			if code != exitInterrupted {
				t.Fatalf("interrupted run: exit %d\n%s", code, app.err.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatal("run did not end within 30 s of the interrupt")
		}
		check(t, out, ids)
		if !strings.Contains(app.err.String(), "interrupt") {
			t.Errorf("stderr does not say the run was interrupted: %q", app.err.String())
		}
	})

	// Requests still streaming when the grace period ends are canceled and keep what they
	// streamed.
	t.Run("grace-cancels", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "g", n: 60, spacing: 500 * time.Millisecond, in: 64, out: 1000})
		out := filepath.Join(dir, "out")
		app := newTestApp(nil)
		sig := make(chan os.Signal, 1)
		app.Interrupts = sig
		done := make(chan int, 1)
		go func() {
			done <- app.cli("run", "--trace", trace, "--out", out, "--time-scale", "20", "--no-progress", "--grace", "50ms")
		}()
		waitFor(t, 20*time.Second, "a first record in requests.msgpack", func() bool {
			return recordsSoFar(filepath.Join(out, "requests.msgpack")) >= 1
		})
		sig <- os.Interrupt
		if code := <-done; code != exitInterrupted {
			t.Fatalf("interrupted run: exit %d\n%s", code, app.err.String())
		}
		check(t, out, ids)
		recs, _ := checkRunInvariants(t, out, ids)
		canceled, streaming := 0, 0
		for _, r := range recs {
			if r.Failure != metrics.FailCanceled {
				continue
			}
			canceled++
			if r.FirstToken != 0 {
				streaming++
			}
			if r.Sent == 0 || r.End <= r.Sent || r.Error == "" {
				t.Errorf("%s: canceled without its send/end times or a reason: sent %d end %d error %q", r.ID, r.Sent, r.End, r.Error)
			}
			if r.FirstToken != 0 && (len(r.Chunks) == 0 || r.OutputTokens == 0) {
				t.Errorf("%s: canceled mid-stream but its chunks were not kept", r.ID)
			}
		}
		if canceled == 0 || streaming == 0 {
			t.Errorf("%d in-flight requests canceled when the 50 ms grace period ended, %d of them mid-stream; want some of each", canceled, streaming)
		}
	})

	// A second interrupt exits at once; the records written so far must be readable at
	// that moment (the Exit hook reads the file before "exiting").
	t.Run("second-interrupt", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		trace, _ := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "k", n: 100, spacing: 500 * time.Millisecond, in: 64, out: 16})
		out := filepath.Join(dir, "out")
		recPath := filepath.Join(out, "requests.msgpack")
		app := newTestApp(nil)
		sig := make(chan os.Signal, 2)
		app.Interrupts = sig
		exited := make(chan error, 1)
		app.Exit = func(code int) {
			recs, err := metrics.ReadRecords(recPath)
			switch {
			case code != 130:
				exited <- fmt.Errorf("exit code %d, want 130", code)
			case err != nil:
				exited <- fmt.Errorf("records unreadable at exit: %w", err)
			case len(recs) == 0:
				exited <- errors.New("no records at exit")
			default:
				exited <- nil
			}
		}
		done := make(chan int, 1)
		go func() {
			done <- app.cli("run", "--trace", trace, "--out", out, "--time-scale", "20", "--no-progress", "--grace", "5s")
		}()
		waitFor(t, 20*time.Second, "a first record in requests.msgpack", func() bool { return recordsSoFar(recPath) >= 1 })
		sig <- os.Interrupt
		sig <- os.Interrupt
		select {
		case err := <-exited:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a second interrupt did not call Exit")
		}
		<-done // the test's Exit returns, so the run finishes normally
	})
}

// TestReliabilityCLIChild is not a test: TestReliabilityKill9 runs this test binary with
// LLMBENCH_CLI_CHILD=1 and the CLI arguments (JSON) in LLMBENCH_CLI_ARGS, and this function
// then runs main() as the real llmbench process would.
func TestReliabilityCLIChild(t *testing.T) {
	if os.Getenv("LLMBENCH_CLI_CHILD") != "1" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv("LLMBENCH_CLI_ARGS")), &args); err != nil {
		fmt.Fprintln(os.Stderr, "LLMBENCH_CLI_ARGS:", err)
		os.Exit(3)
	}
	os.Args = append([]string{"llmbench"}, args...)
	main()
}

// TestReliabilityKill9: a run killed with SIGKILL mid-way leaves every completed record
// readable (at most a partial last frame is reported as truncation).
func TestReliabilityKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	cmd, exited, output, out, ids := startChild(t, "x")
	recPath := filepath.Join(out, "requests.msgpack")
	seen := recordsSoFar(recPath)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-exited
	exited <- err // for the cleanup
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child was not killed: %v\n%s", err, output.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed by SIGKILL: %v", err)
	}
	recs, err := metrics.ReadRecords(recPath)
	if err != nil && !errors.Is(err, metrics.ErrTruncated) {
		t.Fatalf("records after kill -9: %v", err)
	}
	if len(recs) < seen {
		t.Fatalf("after kill -9 %d records are readable, %d were seen before the kill", len(recs), seen)
	}
	if len(recs) >= len(ids) {
		t.Fatalf("the child finished all %d requests before the kill; the test proves nothing", len(ids))
	}
	known := map[string]bool{}
	for _, id := range ids {
		known[id] = true
	}
	for _, r := range recs {
		if !known[r.ID] || r.Intended < 0 || (r.OK() && r.FirstToken == 0) {
			t.Errorf("record %q after kill -9 is not a whole record: %+v", r.ID, r)
		}
		delete(known, r.ID)
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err == nil {
		t.Error("a killed run left a summary.json (should only appear when the run finishes)")
	}
	t.Logf("kill -9 after %d records observed: %d readable (err %v)", seen, len(recs), err)
}

// startRefEngine serves a reference engine on an httptest server for the test's lifetime.
func startRefEngine(t *testing.T, cfg refengine.Config) *httptest.Server {
	t.Helper()
	eng, err := refengine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng.Handler())
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		eng.Close()
		if n := eng.Panics(); n != 0 {
			t.Errorf("reference engine recovered %d handler panics", n)
		}
	})
	return srv
}

// startChild runs `llmbench run` on a long trace as a child process (this test binary, see
// TestReliabilityCLIChild) and waits until its requests.msgpack holds a few records. It
// returns the child, a channel with its Wait result, its combined output, the results
// directory and the trace ids.
func startChild(t *testing.T, prefix string) (*exec.Cmd, chan error, *syncBuffer, string, []string) {
	t.Helper()
	dir := t.TempDir()
	// 2000 requests over 200 s of trace time: 10 s at --time-scale 20, far longer than the
	// tests wait before signalling.
	trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: prefix, n: 2000, spacing: 100 * time.Millisecond, in: 64, out: 16})
	out := filepath.Join(dir, "out")
	args, _ := json.Marshal([]string{"run", "--trace", trace, "--out", out, "--time-scale", "20", "--no-progress", "--grace", "5s"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestReliabilityCLIChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LLMBENCH_CLI_CHILD=1", "LLMBENCH_CLI_ARGS="+string(args))
	output := &syncBuffer{}
	cmd.Stderr = output
	cmd.Stdout = output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	waitFor(t, 30*time.Second, "5 records from the child", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("child exited early (%v):\n%s", err, output.String())
		default:
		}
		return recordsSoFar(filepath.Join(out, "requests.msgpack")) >= 5
	})
	return cmd, exited, output, out, ids
}

// TestReliabilitySIGINT drives the real main() signal handling: the first SIGINT stops the
// run gracefully with complete results marked interrupted; a second one exits at once (130)
// with the records written so far readable.
func TestReliabilitySIGINT(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	wait := func(t *testing.T, exited chan error, output *syncBuffer) *exec.ExitError {
		t.Helper()
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee
			}
			if err != nil {
				t.Fatal(err)
			}
			return nil
		case <-time.After(30 * time.Second):
			t.Fatalf("child still running 30 s after SIGINT:\n%s", output.String())
			return nil
		}
	}
	t.Run("once", func(t *testing.T) {
		t.Parallel()
		cmd, exited, output, out, ids := startChild(t, "o")
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		// Complete results, then exit 130 (issue 20: interrupted after writing results).
		if ee := wait(t, exited, output); ee == nil || ee.ExitCode() != exitInterrupted {
			t.Fatalf("child after one SIGINT: %v, want exit status 130:\n%s", ee, output.String())
		}
		_, s := checkRunInvariants(t, out, ids)
		if !s.Run.Interrupted {
			t.Error("summary.json: run.interrupted is false after SIGINT")
		}
		if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
			t.Error(err)
		}
	})
	t.Run("twice", func(t *testing.T) {
		t.Parallel()
		cmd, exited, output, out, _ := startChild(t, "w")
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the child to acknowledge the first SIGINT", func() bool {
			return strings.Contains(output.String(), "interrupt: stopped sending")
		})
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		ee := wait(t, exited, output)
		if ee == nil || ee.ExitCode() != 130 {
			t.Fatalf("child after two SIGINTs: %v, want exit status 130:\n%s", ee, output.String())
		}
		recs, err := metrics.ReadRecords(filepath.Join(out, "requests.msgpack"))
		if err != nil && !errors.Is(err, metrics.ErrTruncated) {
			t.Fatalf("records after the second SIGINT: %v", err)
		}
		if len(recs) < 5 {
			t.Errorf("%d records readable after the second SIGINT, at least 5 were written before", len(recs))
		}
	})
}

// copyDir copies the regular files of src into a new directory dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReliabilityBadInput: truncated or corrupt results and traces give a clear error that
// names the file, a non-zero exit, and (CSV export) the readable part.
func TestReliabilityBadInput(t *testing.T) {
	dir := t.TempDir()
	trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "b", n: 20, spacing: 100 * time.Millisecond, in: 32, out: 8})
	good := filepath.Join(dir, "good")
	mustRun(t, newTestApp(nil), "run", "--trace", trace, "--out", good, "--time-scale", "20", "--no-progress")
	goodRecs := filepath.Join(good, "requests.msgpack")
	data, err := os.ReadFile(goodRecs)
	if err != nil {
		t.Fatal(err)
	}
	if n := recordsSoFar(goodRecs); n != len(ids) {
		t.Fatalf("good run has %d records", n)
	}

	// Three damaged copies: cut inside the last frame, a corrupt frame body in the middle,
	// and a wrong header.
	truncated := filepath.Join(dir, "truncated")
	copyDir(t, good, truncated)
	if err := os.WriteFile(filepath.Join(truncated, "requests.msgpack"), data[:len(data)-5], 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt")
	copyDir(t, good, corrupt)
	bad := append([]byte(nil), data...)
	// The 11th frame's first body byte becomes 0xc1, which msgpack never uses.
	off := 8
	for range 10 {
		off += 4 + int(uint32(bad[off])<<24|uint32(bad[off+1])<<16|uint32(bad[off+2])<<8|uint32(bad[off+3]))
	}
	bad[off+4] = 0xc1
	if err := os.WriteFile(filepath.Join(corrupt, "requests.msgpack"), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	badMagic := filepath.Join(dir, "badmagic")
	copyDir(t, good, badMagic)
	if err := os.WriteFile(filepath.Join(badMagic, "requests.msgpack"), append([]byte("NOTMAGIC"), data[8:]...), 0o644); err != nil {
		t.Fatal(err)
	}

	damaged := []struct {
		dir      string
		readable int // complete records before the damage
	}{{truncated, len(ids) - 1}, {corrupt, 10}, {badMagic, 0}}
	for _, d := range damaged {
		name := filepath.Base(d.dir)
		recFile := filepath.Join(d.dir, "requests.msgpack")
		t.Run("report-csv-"+name, func(t *testing.T) {
			app := newTestApp(nil)
			code := app.cli("report", d.dir, "--format", "csv")
			if code == 0 {
				t.Fatal("report --format csv of a damaged records file exited 0")
			}
			if !strings.Contains(app.err.String(), recFile) {
				t.Errorf("error does not name %s: %q", recFile, app.err.String())
			}
			lines := strings.Split(strings.TrimSpace(app.out.String()), "\n")
			if lines[0] != "" && !strings.HasPrefix(lines[0], "id,") {
				t.Errorf("CSV does not start with its header: %q", lines[0])
			}
			rows := 0
			for _, l := range lines {
				if strings.HasPrefix(l, "b0") {
					rows++
				}
			}
			if rows != d.readable {
				t.Errorf("report --format csv printed %d of the %d readable rows", rows, d.readable)
			}
		})
		t.Run("report-recompute-"+name, func(t *testing.T) {
			app := newTestApp(nil)
			code := app.cli("report", d.dir, "--recompute", "--format", "terminal")
			if d.dir == truncated {
				// A file cut inside its last frame (what kill -9 leaves) is summarized from
				// its complete records with a warning that names the file.
				if code != 0 {
					t.Fatalf("report --recompute of a truncated records file: exit %d: %s", code, app.err.String())
				}
				s := readSummaryStruct(t, d.dir)
				if s.Requests.Total != d.readable || !strings.Contains(strings.Join(s.Warnings, "\n"), recFile) ||
					!strings.Contains(app.out.String()+app.err.String(), "truncated") {
					t.Errorf("truncated records: total %d (want %d), warnings %q, output without a truncation warning", s.Requests.Total, d.readable, s.Warnings)
				}
				return
			}
			if code == 0 {
				t.Fatal("report --recompute of a corrupt records file exited 0")
			}
			if !strings.Contains(app.err.String(), recFile) {
				t.Errorf("error does not name %s: %q", recFile, app.err.String())
			}
		})
		t.Run("report-html-"+name, func(t *testing.T) {
			app := newTestApp(nil)
			code := app.cli("report", d.dir)
			if d.dir == truncated {
				// summary.json is whole, so the report is re-rendered from it; a non-zero
				// exit must name the damaged file.
				if _, err := os.Stat(filepath.Join(d.dir, "report.html")); err != nil {
					t.Errorf("report of a truncated run wrote no report.html: %v", err)
				}
				if code != 0 && !strings.Contains(app.err.String(), recFile) {
					t.Errorf("report of a truncated run: exit %d without naming %s: %q", code, recFile, app.err.String())
				}
				return
			}
			if code == 0 || !strings.Contains(app.err.String(), recFile) {
				t.Errorf("report DIR (html) with a damaged %s: exit %d, stderr %q; want an error naming it", recFile, code, app.err.String())
			}
		})
		t.Run("compare-"+name, func(t *testing.T) {
			app := newTestApp(nil)
			code := app.cli("compare", good, d.dir)
			if d.dir == truncated {
				// Compared from its complete records, with a warning naming the file.
				if code != 0 || !strings.Contains(app.out.String()+app.err.String(), recFile) {
					t.Errorf("compare with a truncated candidate: exit %d, no warning naming %s:\n%s%s", code, recFile, app.out.String(), app.err.String())
				}
				return
			}
			if code != 2 {
				t.Errorf("compare with a damaged candidate: exit %d, want 2", code)
			}
			if !strings.Contains(app.err.String(), recFile) {
				t.Errorf("error does not name %s: %q", recFile, app.err.String())
			}
		})
	}

	t.Run("summary-truncated", func(t *testing.T) {
		cut := filepath.Join(dir, "cut-summary")
		copyDir(t, good, cut)
		sum, err := os.ReadFile(filepath.Join(cut, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cut, "summary.json"), sum[:len(sum)/2], 0o644); err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"html", "terminal"} {
			app := newTestApp(nil)
			if code := app.cli("report", cut, "--format", format); code == 0 {
				t.Errorf("report --format %s of a truncated summary.json exited 0", format)
			}
			if want := filepath.Join(cut, "summary.json"); !strings.Contains(app.err.String(), want) {
				t.Errorf("error does not name %s: %q", want, app.err.String())
			}
		}
	})

	// A run that cannot start (nothing listens at the endpoint) fails clearly and does not
	// claim results it never wrote.
	t.Run("endpoint-refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		endpoint := "http://" + ln.Addr().String()
		ln.Close()
		app := newTestApp(nil)
		out := filepath.Join(dir, "refused-out")
		if code := app.cli("run", "--trace", trace, "--out", out, "--endpoint", endpoint, "--no-progress"); code == 0 {
			t.Fatal("a run against a closed port exited 0")
		}
		if !strings.Contains(app.err.String(), endpoint) {
			t.Errorf("error does not name the endpoint %s: %q", endpoint, app.err.String())
		}
		_, serr := os.Stat(filepath.Join(out, "summary.json"))
		if strings.Contains(app.out.String(), "results:") && serr != nil {
			t.Fatalf("a run that failed before sending printed %q", strings.TrimSpace(app.out.String()))
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("a run that failed before sending left %s behind", out)
		}
	})

	t.Run("trace-truncated-last-line", func(t *testing.T) {
		full, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		cut := filepath.Join(dir, "cut.jsonl")
		if err := os.WriteFile(cut, full[:len(full)-20], 0o644); err != nil {
			t.Fatal(err)
		}
		app := newTestApp(nil)
		out := filepath.Join(dir, "cut-out")
		if code := app.cli("run", "--trace", cut, "--out", out, "--time-scale", "20", "--no-progress"); code == 0 {
			t.Fatal("a trace with a truncated last line was accepted")
		}
		want := fmt.Sprintf("cut.jsonl:%d", len(ids))
		if !strings.Contains(app.err.String(), want) {
			t.Errorf("error does not name %s: %q", want, app.err.String())
		}
		if _, err := os.Stat(out); err == nil {
			t.Error("a results directory was created for a rejected trace")
		}
	})

	t.Run("trace-msgpack-truncated", func(t *testing.T) {
		reqs, err := traces.ReadFile(trace, traces.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := traces.WriteMsgpack(&buf, reqs); err != nil {
			t.Fatal(err)
		}
		mp := filepath.Join(dir, "cut.msgpack")
		if err := os.WriteFile(mp, buf.Bytes()[:buf.Len()-3], 0o644); err != nil {
			t.Fatal(err)
		}
		app := newTestApp(nil)
		if code := app.cli("run", "--trace", mp, "--out", filepath.Join(dir, "mp-out"), "--no-progress"); code == 0 {
			t.Fatal("a truncated msgpack trace was accepted")
		}
		if want := fmt.Sprintf("cut.msgpack:%d", len(reqs)); !strings.Contains(app.err.String(), want) {
			t.Errorf("error does not name %s: %q", want, app.err.String())
		}
	})

	t.Run("trace-binary-garbage", func(t *testing.T) {
		garbage := filepath.Join(dir, "garbage.jsonl")
		if err := os.WriteFile(garbage, []byte("{\"arrival_s\":0,\"input_tokens\":4,\"output_tokens\":4}\n\x00\xff\xfe{]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		app := newTestApp(nil)
		if code := app.cli("run", "--trace", garbage, "--out", filepath.Join(dir, "g-out"), "--no-progress"); code == 0 {
			t.Fatal("a trace with a binary line was accepted")
		}
		if !strings.Contains(app.err.String(), "garbage.jsonl:2") {
			t.Errorf("error does not name garbage.jsonl:2: %q", app.err.String())
		}
	})
}
