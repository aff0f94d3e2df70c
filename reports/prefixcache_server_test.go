package reports

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmbench/llmbench/metrics"
)

// TestServerPrefixCacheInEveryReport checks that the server's hit rate, or the words saying
// why there is none, reach the terminal, Markdown and HTML reports, and that the terminal
// line stays within its width.
func TestServerPrefixCacheInEveryReport(t *testing.T) {
	cases := []struct {
		p    *metrics.ServerPrefixCache
		want []string
	}{
		{&metrics.ServerPrefixCache{Backend: "vllm", Available: true, Source: "vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total",
			Hits: 18432, Queries: 24576, HitRate: 0.75, WindowStartS: -0.53, WindowEndS: 2.55, Resets: 1, Note: "counter increase"},
			[]string{"server 75.0%", "18,432 of 24,576", "vllm counters", "-0.5 s and 2.5 s", "1 counter reset"}},
		{&metrics.ServerPrefixCache{Backend: "sglang", Note: "SGLang exports only a rolling hit rate gauge (sglang:cache_hit_rate), not the sglang:cached_tokens_total counter; no per-run delta"},
			[]string{"no per-run figure", "SGLang exports only a rolling hit rate gauge"}},
	}
	for _, c := range cases {
		s := fixtureSummary("m", "")
		s.ServerPrefixCache = c.p
		var term, md, html bytes.Buffer
		if err := WriteTerminal(&term, s); err != nil {
			t.Fatal(err)
		}
		if err := WriteMarkdown(&md, s); err != nil {
			t.Fatal(err)
		}
		if err := WriteHTML(&html, s, HTMLOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Log("\n" + term.String())
		// The terminal wraps long lines: compare with the line breaks and indents removed.
		flat := strings.Join(strings.Fields(term.String()), " ")
		for _, w := range c.want {
			if !strings.Contains(flat, w) {
				t.Errorf("terminal lacks %q:\n%s", w, term.String())
			}
			if !strings.Contains(md.String(), w) {
				t.Errorf("markdown lacks %q", w)
			}
		}
		if !strings.Contains(term.String(), "Cache hits") || !strings.Contains(md.String(), "**Prefix cache:**") {
			t.Errorf("labels missing:\n%s", term.String())
		}
		for i, line := range strings.Split(term.String(), "\n") {
			if n := utf8.RuneCountInString(line); n > termWidth {
				t.Errorf("terminal line %d has %d columns", i+1, n)
			}
		}
		h := html.String()
		if !strings.Contains(h, "Server prefix cache") || (c.p.Available && !strings.Contains(h, "75.0%")) ||
			(!c.p.Available && !strings.Contains(h, "rolling hit rate gauge")) {
			t.Errorf("HTML lacks the server prefix cache table")
		}
	}
}
