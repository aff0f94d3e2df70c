package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/usecase"
)

// TestGenTraceToolsRoundTrip drives gen, trace stats/scale/filter/validate through the CLI.
func TestGenTraceToolsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	app := newTestApp(nil)
	gen := filepath.Join(dir, "gen.jsonl")
	if code := app.cli("gen", "--preset", "mixed", "--rate", "4", "--duration", "30s", "--seed", "7", "-o", gen); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, app.err.String())
	}
	reqs, err := traces.ReadFile(gen, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) < 60 || len(reqs) > 180 {
		t.Fatalf("gen at 4 req/s for 30 s made %d requests", len(reqs))
	}
	classes := map[string]bool{}
	for _, r := range reqs {
		classes[r.Class] = true
	}
	if len(classes) < 2 {
		t.Fatalf("mixed preset produced classes %v", classes)
	}
	// Same seed, same bytes.
	again := filepath.Join(dir, "again.jsonl")
	if code := app.cli("gen", "--preset", "mixed", "--rate", "4", "--duration", "30s", "--seed", "7", "-o", again); code != 0 {
		t.Fatal(app.err.String())
	}
	a, _ := os.ReadFile(gen)
	b, _ := os.ReadFile(again)
	if string(a) != string(b) {
		t.Fatal("gen is not deterministic for a fixed seed")
	}

	app = newTestApp(nil)
	if code := app.cli("trace", "stats", gen, "--json"); code != 0 {
		t.Fatalf("trace stats: %s", app.err.String())
	}
	var st traces.Stats
	if err := json.Unmarshal([]byte(app.out.String()), &st); err != nil {
		t.Fatalf("trace stats --json: %v\n%s", err, app.out.String())
	}
	want := traces.ComputeStats(reqs)
	if st.Count != want.Count || st.DurationS != want.DurationS {
		t.Fatalf("stats %+v, want %+v", st, want)
	}

	scaled := filepath.Join(dir, "scaled.jsonl")
	app = newTestApp(nil)
	if code := app.cli("trace", "scale", gen, "--factor", "2", "-o", scaled); code != 0 {
		t.Fatalf("trace scale: %s", app.err.String())
	}
	sreqs, err := traces.ReadFile(scaled, traces.ReadOptions{})
	if err != nil || len(sreqs) != len(reqs) {
		t.Fatalf("scaled: %d requests, %v", len(sreqs), err)
	}
	if d, s := traces.Duration(reqs), traces.Duration(sreqs); s < d*2*99/100 || s > d*2*101/100 {
		t.Fatalf("--factor 2: duration %v -> %v", d, s)
	}

	app = newTestApp(nil)
	if code := app.cli("trace", "validate", gen, scaled); code != 0 {
		t.Fatalf("validate: %s", app.err.String()+app.out.String())
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"arrival_s\":0,\"input_tokens\":1,\"output_tokens\":1,\"bogus\":2}\n"), 0o644)
	app = newTestApp(nil)
	if code := app.cli("trace", "validate", bad); code == 0 {
		t.Fatal("validate accepted an unknown field")
	}
	if out := app.out.String() + app.err.String(); !strings.Contains(out, "bad.jsonl:1: bogus") {
		t.Fatalf("validate did not name file:line: field: %s", out)
	}
}

// TestImportAzure converts a small Azure-format CSV through the CLI.
func TestImportAzure(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "azure.csv")
	csv := "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
		"2023-11-16 18:15:46.6805900,374,44\n" +
		"2023-11-16 18:15:50.9951690,396,109\n" +
		"2023-11-16 18:15:51.1022510,879,37\n"
	if err := os.WriteFile(in, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	app := newTestApp(nil)
	if code := app.cli("import", "--format", "azure", in, "-o", out); code != 0 {
		t.Fatalf("import: %s", app.err.String())
	}
	reqs, err := traces.ReadFile(out, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 || reqs[0].Arrival != 0 || reqs[1].InputTokens != 396 || reqs[2].OutputTokens != 37 {
		t.Fatalf("imported %+v", reqs)
	}
	if d := reqs[1].Arrival.Seconds(); d < 4.31 || d > 4.32 {
		t.Fatalf("second arrival %.4f s, want 4.3146", d)
	}
}

func simulateTo(t *testing.T, dir string, args ...string) *metrics.Summary {
	t.Helper()
	app := newTestApp(nil)
	full := append([]string{"simulate", "--trace", chatSmall, "--out", dir}, args...)
	if code := app.cli(full...); code != 0 {
		t.Fatalf("simulate %v: exit %d: %s", args, code, app.err.String())
	}
	s, err := runner.ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCompareGate: two simulations of the same configuration do not regress; the same trace
// on a slower GPU does, and compare exits 1.
func TestCompareGate(t *testing.T) {
	root := t.TempDir()
	base := filepath.Join(root, "base")
	same := filepath.Join(root, "same")
	slow := filepath.Join(root, "slow")
	simulateTo(t, base, "--gpu", "h100")
	simulateTo(t, same, "--gpu", "h100")
	ss := simulateTo(t, slow, "--gpu", "a100")
	if ss.Run.Mode != "simulated" || ss.Requests.Succeeded != ss.Requests.Total {
		t.Fatalf("simulate summary %+v", ss.Requests)
	}
	rules := "ttft.p95>+5%,tpot.p50>+5%"
	app := newTestApp(nil)
	if code := app.cli("compare", base, same, "--fail-on", rules); code != 0 {
		t.Fatalf("identical configurations: exit %d\n%s%s", code, app.out.String(), app.err.String())
	}
	app = newTestApp(nil)
	html := filepath.Join(root, "cmp.html")
	if code := app.cli("compare", base, slow, "--fail-on", rules, "--html", html); code != 1 {
		t.Fatalf("A100 vs H100: exit %d, want 1\n%s%s", code, app.out.String(), app.err.String())
	}
	if _, err := os.Stat(html); err != nil {
		t.Fatal("comparison HTML not written")
	}
	app = newTestApp(nil)
	if code := app.cli("compare", base, slow, "--format", "json"); code != 0 {
		t.Fatalf("no rules: exit %d", code)
	}
	var c metrics.Comparison
	if err := json.Unmarshal([]byte(app.out.String()), &c); err != nil {
		t.Fatal(err)
	}
	if !c.Paired || c.MatchedIDs != ss.Requests.Total {
		t.Fatalf("comparison not paired by id: paired=%v matched=%d", c.Paired, c.MatchedIDs)
	}
	app = newTestApp(nil)
	if code := app.cli("compare", base, filepath.Join(root, "missing")); code != 2 {
		t.Fatalf("missing directory: exit %d, want 2", code)
	}
}

// TestABSpeculativeDecoding runs the fair A/B on the reference engine with speculative
// decoding off and on: per-chunk ITL differs from per-token ITL only on the speculative arm,
// tokens per chunk rise, and greedy outputs are identical.
func TestABSpeculativeDecoding(t *testing.T) {
	out := t.TempDir()
	app := newTestApp(nil)
	code := app.cli("ab", "--trace", chatSmall, "--b-engine", "spec-k=4,spec-alpha=0.8", "--time-scale", "20",
		"--runs", "1", "--warmup-requests", "2", "--max-requests", "30", "--format", "json", "--out", out, "--no-progress")
	if code != 0 {
		t.Fatalf("ab: exit %d\n%s", code, app.err.String())
	}
	data, err := os.ReadFile(filepath.Join(out, "ab.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res runner.ABResult
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	c := res.Comparison
	if c.Equivalence == nil || c.Equivalence.Compared == 0 || c.Equivalence.Mismatched != 0 {
		t.Fatalf("output equivalence %+v", c.Equivalence)
	}
	a, b := c.Base.Summary, c.Cand.Summary
	if a.TokensPerChunk.Max != 1 || b.TokensPerChunk.Mean < 2 {
		t.Fatalf("tokens per chunk: A %+v, B %+v", a.TokensPerChunk, b.TokensPerChunk)
	}
	if b.Latency.ITLChunk.Mean < 1.5*b.Latency.ITL.Mean {
		t.Fatalf("spec arm: per-chunk ITL mean %.2f ms vs per-token %.2f ms", b.Latency.ITLChunk.Mean, b.Latency.ITL.Mean)
	}
	found := false
	for _, d := range res.ConfigDiff {
		if d.Key == "engine.num_speculative_tokens" && d.A == "0" && d.B == "4" {
			found = true
		}
	}
	if !found {
		t.Fatalf("config differences do not list the draft length: %+v", res.ConfigDiff)
	}
	if _, err := os.Stat(filepath.Join(out, "comparison.html")); err != nil {
		t.Fatal(err)
	}
}

// TestSweepCapacityConfirmedBySimulate: the capacity a simulated sweep reports meets the
// goodput target when simulated again at that rate, and the first failing load does not.
func TestSweepCapacityConfirmedBySimulate(t *testing.T) {
	out := t.TempDir()
	app := newTestApp(nil)
	slo := "ttft=300ms,tpot=20ms"
	if code := app.cli("sweep", "--trace", chatSmall, "--slo", slo, "--target", "0.9", "--simulate", "--min-duration", "30s", "--out", out); code != 0 {
		t.Fatalf("sweep: exit %d: %s", code, app.err.String())
	}
	data, err := os.ReadFile(filepath.Join(out, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res runner.SweepResult
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Capacity.Rate <= 0 || res.Capacity.Failing <= res.Capacity.Rate {
		t.Fatalf("capacity %+v", res.Capacity)
	}
	reqs, err := traces.ReadFile(chatSmall, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := runner.TraceRate(reqs)
	check := func(rate float64) float64 {
		tiled := filepath.Join(t.TempDir(), "tiled.jsonl")
		f, _ := os.Create(tiled)
		traces.WriteJSONL(f, runner.Tile(reqs, 4))
		f.Close()
		dir := t.TempDir()
		app := newTestApp(nil)
		if code := app.cli("simulate", "--trace", tiled, "--slo", slo, "--rate-scale", ftoa(rate/base), "--out", dir); code != 0 {
			t.Fatalf("simulate: %s", app.err.String())
		}
		s, err := runner.ReadSummary(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s.Goodput.Fraction
	}
	if g := check(res.Capacity.Rate); g < 0.9 {
		t.Errorf("at the capacity %.3g req/s simulate finds goodput %.3f < 0.9", res.Capacity.Rate, g)
	}
	if g := check(res.Capacity.Failing * 1.1); g >= 0.9 {
		t.Errorf("10%% above the first failing load (%.3g req/s) simulate still finds goodput %.3f", res.Capacity.Failing, g)
	}
}

// TestBenchJSON runs a tiny self-benchmark and checks that every figure the issue names is
// reported with the machine's facts (values are not judged here: targets live in the bench
// command itself, not in unit tests).
func TestBenchJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("self-benchmark skipped in -short mode")
	}
	app := newTestApp(nil)
	if code := app.cli("bench", "--json", "--quick", "--runs", "1", "--streams", "20", "--stream-tokens", "10", "--ingest-tokens", "5000", "--dispatch-step", "100ms"); code != 0 {
		t.Fatalf("bench: exit %d: %s", code, app.err.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(app.out.String()), &m); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, app.out.String())
	}
	for _, k := range []string{"dispatch_req_per_s", "ingest_tokens_per_s", "arrival_error_p99_ms", "client_cpu_fraction"} {
		v, ok := m[k].(float64)
		if !ok || v < 0 {
			t.Errorf("%s = %v", k, m[k])
		}
	}
	if v, _ := m["ingest_tokens_per_s"].(float64); v <= 0 {
		t.Errorf("ingest_tokens_per_s = %v", v)
	}
	raw, _ := json.Marshal(m)
	for _, k := range []string{"cpu_model", "cores", "go_version"} {
		if !strings.Contains(string(raw), `"`+k+`"`) {
			t.Errorf("machine fact %q missing from %s", k, raw)
		}
	}
}

// TestRunScrapeMetrics: --scrape-metrics polls the engine's Prometheus /metrics during the run
// and keeps the series next to the results, where the report charts them.
func TestRunScrapeMetrics(t *testing.T) {
	dir := t.TempDir()
	app := newTestApp(nil)
	if code := app.cli("run", "--trace", chatSmall, "--out", dir, "--time-scale", "4", "--scrape-metrics", "--no-progress"); code != 0 {
		t.Fatalf("exit %d: %s", code, app.err.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, runner.ScrapeFile))
	if err != nil {
		t.Fatal(err)
	}
	var s runner.ServerSamples
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Samples) == 0 || s.Errors != 0 {
		t.Fatalf("%d samples, %d errors (%s)", len(s.Samples), s.Errors, s.LastError)
	}
	busy := false
	for _, p := range s.Samples {
		if p.Running < 0 || p.Waiting < 0 || p.KVUsage < 0 || p.Preemptions < 0 {
			t.Fatalf("a vLLM-named metric is missing from the engine's /metrics: %+v", p)
		}
		busy = busy || p.Running > 0
	}
	if !busy {
		t.Error("no sample saw a running request")
	}
	html, err := os.ReadFile(filepath.Join(dir, runner.ReportFile))
	if err != nil || !strings.Contains(string(html), "/metrics") {
		t.Errorf("report does not show the scraped server metrics (err %v)", err)
	}
}

// TestMalformedHeaderNotEchoed: a --header without ':' may be a bare token pasted by mistake;
// the error must not repeat it.
func TestMalformedHeaderNotEchoed(t *testing.T) {
	app := newTestApp(nil)
	if code := app.cli("run", "--trace", chatSmall, "--header", "sk-0123456789abcdef", "--out", t.TempDir()); code == 0 {
		t.Fatal("a header without ':' was accepted")
	}
	if msg := app.err.String(); strings.Contains(msg, "sk-0") || !strings.Contains(msg, "--header") {
		t.Fatalf("error %q", msg)
	}
}

// TestRunNotesAHeldTrace: a long trace that cannot be replayed as it is read (here: not in
// arrival order) is held in memory, and run says so and how to avoid it; a sorted one is not.
func TestRunNotesAHeldTrace(t *testing.T) {
	defer func(n int) { usecase.HeldNoteMin = n }(usecase.HeldNoteMin)
	usecase.HeldNoteMin = 2
	dir := t.TempDir()
	unsorted := filepath.Join(dir, "unsorted.jsonl")
	sorted := filepath.Join(dir, "sorted.jsonl")
	line := func(id string, at float64) string {
		return fmt.Sprintf(`{"id":%q,"arrival_s":%g,"input_tokens":4,"output_tokens":2}`+"\n", id, at)
	}
	if err := os.WriteFile(unsorted, []byte(line("b", 0.2)+line("a", 0.1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sorted, []byte(line("a", 0.1)+line("b", 0.2)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		note bool
	}{{unsorted, true}, {sorted, false}} {
		app := newTestApp(nil)
		if code := app.cli("run", "--trace", c.path, "--out", filepath.Join(dir, filepath.Base(c.path)+".out"), "--time-scale", "20", "--no-progress"); code != 0 {
			t.Fatalf("%s: exit %d: %s", c.path, code, app.err)
		}
		got := strings.Contains(app.err.String(), "is held in memory (2 requests)")
		if got != c.note || (c.note && !strings.Contains(app.err.String(), "llmbench trace scale "+c.path+" --factor 1")) {
			t.Errorf("%s: note %v, want %v; stderr:\n%s", c.path, got, c.note, app.err)
		}
	}
}
