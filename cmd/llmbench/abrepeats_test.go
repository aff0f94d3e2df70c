package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
)

// TestABJSONOnStdoutAndRunsAlias: ab --format json writes exactly one JSON document to
// stdout (it pipes into jq); every message, the deprecated --repeats warning among them, goes
// to stderr. The default repeats are salted, and the output says so.
func TestABJSONOnStdoutAndRunsAlias(t *testing.T) {
	out := t.TempDir()
	app := newTestApp(nil)
	code := app.cli("ab", "--trace", chatSmall, "--time-scale", "20", "--repeats", "1", "--warmup-requests", "2",
		"--max-requests", "8", "--format", "json", "--out", out, "--no-progress")
	if code != 0 {
		t.Fatalf("ab: exit %d\n%s", code, app.err.String())
	}
	dec := json.NewDecoder(strings.NewReader(app.out.String()))
	var c metrics.Comparison
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("stdout is no JSON document: %v\n%s", err, app.out.String())
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("stdout has more than the JSON document: %v", err)
	}
	stderr := app.err.String()
	for _, want := range []string{"--repeats is deprecated: use --runs", "results: " + out, "Independent repeats: prompts salted per repeat"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestABRepeatFlagsRefused: bad uses of the run-count and independence flags exit 2 before
// anything is measured, with a message naming the fix.
func TestABRepeatFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--runs", "2", "--repeats", "2"}, "give --runs only"},
		{[]string{"--independent-repeats", "sometimes"}, "want one of salt, flush, salt+flush, off"},
		{[]string{"--self-check", "2", "--format", "json"}, "--self-check prints one line per experiment"},
		{[]string{"--runs", "0"}, "--runs \"0\""},
		{[]string{"--repeat", "2"}, "use --runs N"},
	} {
		app := newTestApp(nil)
		code := app.cli(append([]string{"ab", "--trace", chatSmall, "--time-scale", "20", "--out", t.TempDir()}, tc.args...)...)
		if code != 2 || !strings.Contains(app.err.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, app.err.String(), tc.want)
		}
		if app.out.String() != "" {
			t.Errorf("%v: stdout %q", tc.args, app.out.String())
		}
	}
}

// sglangShaped serves the reference engine as an SGLang server would be seen: its own API,
// plus /get_server_info (server args with a random seed drawn per process) and /flush_cache,
// whose calls it counts.
func sglangShaped(t *testing.T, specAlgo string, proc int, flushes *atomic.Int32) string {
	eng, err := refengine.New(refengine.Config{Seed: 1, TimeScale: 50, Wire: "sglang"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	mux := http.NewServeMux()
	mux.Handle("/", eng.Handler())
	mux.HandleFunc("GET /get_server_info", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"model_path":"m","speculative_algorithm":%q,"random_seed":%d,"internal_states":[{"last_gen_throughput":%d.5}]}`, specAlgo, 1000+proc, proc)
	})
	mux.HandleFunc("POST /flush_cache", func(w http.ResponseWriter, _ *http.Request) {
		flushes.Add(1)
		io.WriteString(w, "Cache flushed.\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestABEndpointsFlushAndConfigDiff: two endpoint arms with --independent-repeats flush have
// their caches flushed once when the method is found and once before each measured run; the
// speculative difference is listed in ab.json and in the comparison, the per-process random
// seed and live throughput are not (ab.json lists them as ignored).
func TestABEndpointsFlushAndConfigDiff(t *testing.T) {
	var fa, fb atomic.Int32
	a, b := sglangShaped(t, "", 1, &fa), sglangShaped(t, "EAGLE", 2, &fb)
	out := t.TempDir()
	app := newTestApp(nil)
	code := app.cli("ab", "--trace", chatSmall, "--a-endpoint", a, "--b-endpoint", b, "--independent-repeats", "flush",
		"--runs", "2", "--warmup-requests", "1", "--max-requests", "6", "--rate-scale", "20", "--format", "json",
		"--out", out, "--no-progress")
	if code != 0 {
		t.Fatalf("ab: exit %d\n%s", code, app.err.String())
	}
	if fa.Load() != 3 || fb.Load() != 3 {
		t.Errorf("flushes A %d, B %d; want 3 each (one to find the method, one per run)", fa.Load(), fb.Load())
	}
	if !strings.Contains(app.err.String(), "prefix cache flushed before every measured run (A: SGLang POST /flush_cache, B: SGLang POST /flush_cache)") {
		t.Errorf("stderr does not say how repeats were kept independent:\n%s", app.err.String())
	}
	data, err := os.ReadFile(filepath.Join(out, "ab.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res runner.ABResult
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	keys := func(ks []string) string { return strings.Join(ks, " ") }
	var diff, cmpDiff []string
	for _, d := range res.ConfigDiff {
		diff = append(diff, d.Key)
	}
	for _, d := range res.Comparison.ConfigDiff {
		cmpDiff = append(cmpDiff, d.Key)
	}
	if !strings.Contains(keys(diff), "sglang.speculative_algorithm") || strings.Contains(keys(diff), "random_seed") || strings.Contains(keys(diff), "internal_states") {
		t.Errorf("ab.json config_diff %v", diff)
	}
	if keys(res.ConfigIgnored) != "sglang.internal_states.0.last_gen_throughput sglang.random_seed" {
		t.Errorf("config_ignored %v", res.ConfigIgnored)
	}
	if !strings.Contains(keys(cmpDiff), "engine.sglang.speculative_algorithm") || strings.Contains(keys(cmpDiff), "random_seed") {
		t.Errorf("comparison config_diff %v", cmpDiff)
	}
}
