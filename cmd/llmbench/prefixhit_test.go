package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
)

// TestPrefixHitFlagsRefused: the priming flags refuse what they cannot do, naming the flag,
// before anything is sent.
func TestPrefixHitFlagsRefused(t *testing.T) {
	tr := chatSmall
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"tolerance without a rate", []string{"run", "--trace", tr, "--prefix-hit-tolerance", "0.05"}, "--prefix-hit-tolerance"},
		{"rate of one", []string{"run", "--trace", tr, "--prefix-hit-rate", "1"}, "--prefix-hit-rate"},
		{"negative rate", []string{"run", "--trace", tr, "--prefix-hit-rate", "-0.5"}, "--prefix-hit-rate"},
		{"zero tolerance", []string{"run", "--trace", tr, "--prefix-hit-rate", "0.5", "--prefix-hit-tolerance", "0"}, "--prefix-hit-tolerance"},
		{"priming a shard", []string{"run", "--trace", tr, "--endpoint", "http://127.0.0.1:1", "--shard", "0/2", "--prime-prefixes"}, "--prime-prefixes"},
		{"a cold shard", []string{"run", "--trace", tr, "--endpoint", "http://127.0.0.1:1", "--shard", "0/2", "--cold"}, "--cold"},
		{"headers timeout without a stream", []string{"run", "--trace", tr, "--no-stream", "--timeout-headers", "1s"}, "--timeout-headers"},
		{"negative headers timeout", []string{"ab", "--trace", tr, "--timeout-headers", "-1s"}, "--timeout-headers"},
		{"workers without an endpoint", []string{"run", "--trace", tr, "--scrape-workers", "http://127.0.0.1:1"}, "--scrape-workers"},
		{"worker not a URL", []string{"run", "--trace", tr, "--endpoint", "http://127.0.0.1:1", "--scrape-workers", "ftp://x"}, "--scrape-workers"},
		{"gen rate with a probe preset", []string{"gen", "--preset", "long-context-probe", "--prefix-hit-rate", "0.5"}, "--prefix-hit-rate"},
		{"gen rate with sessions", []string{"gen", "--preset", "agentic", "--prefix-hit-rate", "0.5"}, "sessions"},
		{"gen rate out of range", []string{"gen", "--preset", "prefix-hit", "--prefix-hit-rate", "1.2"}, "--prefix-hit-rate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			app := newTestApp(nil)
			if code := app.cli(c.args...); code == 0 {
				t.Fatalf("%v: exit 0, want an error naming %s", c.args, c.want)
			}
			if msg := app.err.String(); !strings.Contains(msg, c.want) {
				t.Errorf("%v: error %q does not name %s", c.args, msg, c.want)
			}
		})
	}
}

// TestGenAndRunAtPrefixHitRate: gen --preset prefix-hit --prefix-hit-rate 0.9, then run
// --prefix-hit-rate 0.9 on the embedded engine: the flush and priming are done, the measured
// window runs at 90% within 2 pp, and the terminal says so.
func TestGenAndRunAtPrefixHitRate(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "hit.jsonl")
	app := newTestApp(nil)
	if code := app.cli("gen", "--preset", "prefix-hit", "--prefix-hit-rate", "0.9", "--rate", "2", "--duration", "10s", "-o", trace); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, app.err.String())
	}
	if !strings.Contains(app.err.String(), "designed prefix-cache hit rate 90.00%") {
		t.Fatalf("gen stderr %q", app.err.String())
	}
	out := filepath.Join(dir, "run")
	app = newTestApp(nil)
	if code := app.cli("run", "--trace", trace, "--time-scale", "50", "--prefix-hit-rate", "0.9", "--scrape-metrics", "-q", "-o", out); code != 0 {
		t.Fatalf("run: exit %d: %s", code, app.err.String())
	}
	s, err := runner.ReadSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	p := s.PrefixPriming
	if p == nil || p.Flushed == "" || p.Groups == 0 || !p.Verified || p.AchievedHitRate == nil || *p.AchievedHitRate < 0.88 || p.ServerHitRate == nil {
		t.Fatalf("prefix priming %+v", p)
	}
	if flat := strings.Join(strings.Fields(app.out.String()), " "); !strings.Contains(flat, "requested 90.0%") || !strings.Contains(flat, "within 2.0 pp") {
		t.Fatalf("terminal lacks the check:\n%s", app.out.String())
	}
}

// TestScrapeWorkersSecretsNeverWritten: a worker URL's credentials (user info, query token)
// reach neither the results nor the terminal, and the run reports the worker's share.
func TestScrapeWorkersSecretsNeverWritten(t *testing.T) {
	eng, err := refengine.New(refengine.Config{Seed: 1, TimeScale: 50})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng.Handler())
	defer func() { srv.Close(); eng.Close() }()
	worker := strings.Replace(srv.URL, "http://", "http://scraper:w0rkerPass@", 1) + "/v1?token=w0rkerTok"
	out := filepath.Join(t.TempDir(), "run")
	app := newTestApp(nil)
	if code := app.cli("run", "--trace", chatSmall, "--endpoint", srv.URL, "--scrape-workers", worker+","+srv.URL, "--max-requests", "6", "-q", "-o", out); code != 0 {
		t.Fatalf("run: exit %d: %s", code, app.err.String())
	}
	s, err := runner.ReadSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if p := s.ServerPrefixCache; p == nil || !p.Available || len(p.Endpoints) != 2 {
		t.Fatalf("server prefix cache %+v", p)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"w0rkerPass", "w0rkerTok"} {
			if strings.Contains(string(b), secret) {
				t.Errorf("%s holds %s", filepath.Base(f), secret)
			}
		}
	}
	for _, secret := range []string{"w0rkerPass", "w0rkerTok"} {
		if strings.Contains(app.out.String()+app.err.String(), secret) {
			t.Errorf("the terminal shows %s", secret)
		}
	}
}

// TestABFlushesTheEmbeddedEngine: ab --independent-repeats flush on two embedded reference
// engines flushes each one's prefix cache by its endpoint (refengine/flush.go).
func TestABFlushesTheEmbeddedEngine(t *testing.T) {
	app := newTestApp(nil)
	code := app.cli("ab", "--trace", chatSmall, "--time-scale", "20", "--independent-repeats", "flush", "--runs", "2",
		"--warmup-requests", "1", "--max-requests", "6", "--format", "json", "--out", t.TempDir(), "--no-progress")
	if code != 0 {
		t.Fatalf("ab: exit %d\n%s", code, app.err.String())
	}
	if !strings.Contains(app.err.String(), "prefix cache flushed before every measured run (A: SGLang POST /flush_cache, B: SGLang POST /flush_cache)") {
		t.Errorf("stderr does not say the caches were flushed:\n%s", app.err.String())
	}
}
