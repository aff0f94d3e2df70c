package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// testApp is an App over buffers with no interrupts.
type testApp struct {
	App
	out, err *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTestApp(env map[string]string) *testApp {
	t := &testApp{out: &syncBuffer{}, err: &syncBuffer{}}
	t.App = App{Stdout: t.out, Stderr: t.err, Getenv: func(k string) string { return env[k] }}
	return t
}

// cli runs the whole CLI in-process and returns the exit code.
func (t *testApp) cli(args ...string) int {
	return execute(context.Background(), &t.App, args)
}

const chatSmall = "../../traces/examples/chat-small.jsonl"

func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			n++
		}
	}
	return n
}

func readSummaryMap(t *testing.T, dir string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// field walks a dotted path through decoded JSON.
func field(t *testing.T, m map[string]any, path string) any {
	t.Helper()
	var cur any = m
	for _, p := range strings.Split(path, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("summary.json: %s: %q is not an object", path, p)
		}
		cur, ok = obj[p]
		if !ok {
			t.Fatalf("summary.json: missing %s", path)
		}
	}
	return cur
}

func num(t *testing.T, m map[string]any, path string) float64 {
	t.Helper()
	v, ok := field(t, m, path).(float64)
	if !ok {
		t.Fatalf("summary.json: %s is not a number", path)
	}
	return v
}

// TestRunEmbeddedEndToEnd is the walking skeleton: the whole CLI replays the example trace
// against the embedded reference engine over real HTTP streaming (20x faster than real time)
// and writes a complete results directory.
func TestRunEmbeddedEndToEnd(t *testing.T) {
	app := newTestApp(nil)
	dir := t.TempDir()
	if code := app.cli("run", "--trace", chatSmall, "--out", dir, "--time-scale", "20", "--slo", "ttft=2s,tpot=100ms"); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, app.err.String())
	}
	n := countLines(t, chatSmall)
	m := readSummaryMap(t, dir)
	if s := field(t, m, "schema"); s != metrics.SummarySchema {
		t.Fatalf("schema %v", s)
	}
	for _, p := range []string{"run.command", "run.trace", "run.endpoint", "run.model", "run.seed", "run.start", "run.duration_s", "run.llmbench_version",
		"requests.failures", "requests.input_tokens", "requests.output_tokens", "requests.token_source",
		"throughput.requests_per_s", "throughput.input_tokens_per_s", "throughput.output_tokens_per_s",
		"goodput.slo", "goodput.requests_per_s", "goodput.fraction", "stalls.threshold_ms", "fluidity.index_mean",
		"client.schedule_lag_ms.p99", "by_class", "workload", "prefix_cache.hit_rate", "prefix_cache.reported", "prefix_cache.ttft_by_reuse"} {
		field(t, m, p)
	}
	for _, metric := range []string{"ttft", "tpot", "itl", "itl_chunk", "e2e", "queue"} {
		for _, stat := range []string{"mean", "p50", "p90", "p95", "p99", "p999", "max", "count"} {
			field(t, m, "latency_ms."+metric+"."+stat)
		}
	}
	if got := num(t, m, "requests.total"); int(got) != n {
		t.Errorf("requests.total = %v, trace has %d", got, n)
	}
	if got := num(t, m, "requests.succeeded"); int(got) != n {
		t.Errorf("requests.succeeded = %v of %d; failures %v", got, n, field(t, m, "requests.failures"))
	}
	if p50, p99 := num(t, m, "latency_ms.ttft.p50"), num(t, m, "latency_ms.ttft.p99"); p50 <= 0 || p99 < p50 {
		t.Errorf("ttft p50 %v p99 %v", p50, p99)
	}
	if v := num(t, m, "throughput.output_tokens_per_s"); v <= 0 {
		t.Errorf("output tok/s %v", v)
	}
	recs, err := metrics.ReadRecords(filepath.Join(dir, "requests.msgpack"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Fatalf("requests.msgpack has %d records, trace %d", len(recs), n)
	}
	for _, r := range recs {
		if r.TokenSource != metrics.TokensFromUsage || r.OutputTokens != r.RequestedTokens {
			t.Fatalf("record %s: %d tokens from %q, asked %d", r.ID, r.OutputTokens, r.TokenSource, r.RequestedTokens)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(html, []byte("<html")) {
		t.Fatal("report.html is not HTML")
	}
	if out := app.out.String(); !strings.Contains(out, "TTFT") || !strings.Contains(out, dir) {
		t.Errorf("terminal summary missing TTFT or the results path:\n%s", out)
	}

	// The report re-renders from the saved files.
	if err := os.Remove(filepath.Join(dir, "report.html")); err != nil {
		t.Fatal(err)
	}
	if code := app.cli("report", dir); code != 0 {
		t.Fatalf("report: exit %d: %s", code, app.err.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Fatal(err)
	}
}

func TestRunRejectsMalformedTrace(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "bad.jsonl")
	data := "{\"arrival_s\":0,\"input_tokens\":10,\"output_tokens\":5}\n{\"arrival_s\":1,\"input_tokens\":10,\"output_tokens\":-3}\n"
	if err := os.WriteFile(trace, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	app := newTestApp(nil)
	if code := app.cli("run", "--trace", trace, "--out", filepath.Join(dir, "out")); code == 0 {
		t.Fatal("malformed trace accepted")
	}
	if msg := app.err.String(); !strings.Contains(msg, "bad.jsonl:2: output_tokens:") {
		t.Fatalf("error does not name file:line: field: %q", msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a results directory was created for a rejected trace")
	}
}
