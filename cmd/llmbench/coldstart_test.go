package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
)

// engineServer serves a reference engine over HTTP, kept across runs as a real server is;
// without flush, it answers 404 to every prefix-cache flush endpoint (as TGI or Ollama would).
func engineServer(t *testing.T, flush bool) string {
	eng, err := refengine.New(refengine.Config{Seed: 1, TimeScale: 50})
	if err != nil {
		t.Fatal(err)
	}
	h := eng.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case !flush && (p == "/flush_cache" || p == "/reset_prefix_cache" || strings.HasPrefix(p, "/slots")):
			http.NotFound(w, r)
		default:
			h.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(func() { srv.Close(); eng.Close() })
	return srv.URL
}

func hasWarning(s *metrics.Summary, prefix string) bool {
	for _, w := range s.Warnings {
		if strings.HasPrefix(w, prefix) {
			return true
		}
	}
	return false
}

// TestRunWarmCacheWarnsAndColdDoesNot: the same trace and seed run twice against a server
// that keeps its prefix cache: the first run is cold, the second finds its prompts cached far
// beyond the trace's design (none) and warns; run --cold flushes the cache where the server
// offers a way and salts the prompts, so it runs cold again, and the run facts say how; a run
// given that salt (--prompt-salt) sends the same prompts and finds them warm. On a server with
// no flush, --cold salts alone, and that suffices.
func TestRunWarmCacheWarnsAndColdDoesNot(t *testing.T) {
	dir := t.TempDir()
	trace, _ := writeTrace(t, dir, "t.jsonl", traceSpec{prefix: "c", n: 10, spacing: 40 * time.Millisecond, in: 600, out: 6})
	const warm = "prefix cache: the server had these prompts cached"
	for _, flush := range []bool{true, false} {
		url := engineServer(t, flush)
		run := func(name string, extra ...string) *metrics.Summary {
			out := filepath.Join(dir, name)
			mustRun(t, newTestApp(nil), append([]string{"run", "--trace", trace, "--endpoint", url, "-q", "-o", out}, extra...)...)
			return readSummaryStruct(t, out)
		}
		tag := map[bool]string{true: "flush", false: "noflush"}[flush]
		first := run(tag + "-1")
		if first.PrefixCache == nil || first.PrefixCache.DesignedHitRate == nil || hasWarning(first, warm) {
			t.Fatalf("%s: first run: prefix cache %+v, warnings %q", tag, first.PrefixCache, first.Warnings)
		}
		second := run(tag + "-2")
		if !hasWarning(second, warm) || second.PrefixCache.HitRate < 0.5 {
			t.Errorf("%s: second run at hit rate %.3f: warnings %q", tag, second.PrefixCache.HitRate, second.Warnings)
		}
		cold := run(tag+"-cold", "--cold")
		c := cold.Run.Cold
		if hasWarning(cold, warm) || c == nil || c.Salt == 0 || cold.Run.PromptSalt != c.Salt || c.Requests != 10 {
			t.Fatalf("%s: cold run at hit rate %.3f, cold %+v, warnings %q", tag, cold.PrefixCache.HitRate, c, cold.Warnings)
		}
		if flush && c.Flushed != "SGLang POST /flush_cache" || !flush && (c.Flushed != "" || !strings.Contains(c.FlushNote, "no prefix-cache flush")) {
			t.Errorf("%s: cold block %+v", tag, c)
		}
		// The salt reproduces the cold run's prompts, which the server now holds.
		again := run(tag+"-again", "--prompt-salt", strconv.FormatUint(c.Salt, 10))
		if !hasWarning(again, warm) || again.Run.PromptSalt != c.Salt || again.Run.Cold != nil {
			t.Errorf("%s: rerun with the cold run's salt: hit rate %.3f, salt %d, cold %+v", tag, again.PrefixCache.HitRate, again.Run.PromptSalt, again.Run.Cold)
		}
	}
}
