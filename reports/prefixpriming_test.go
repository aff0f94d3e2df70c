package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestPrefixPrimingInEveryReport: the priming and the hit-rate check reach the terminal,
// Markdown and HTML reports, with the verdict.
func TestPrefixPrimingInEveryReport(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		p    *metrics.PrefixPriming
		want []string
	}{
		{&metrics.PrefixPriming{Flushed: "vLLM POST /reset_prefix_cache", Groups: 8, Tokens: 36864, RequestedHitRate: f(0.9), Tolerance: 0.02,
			AchievedHitRate: f(0.9), ServerHitRate: f(0.899), DesignedHitRate: f(0.9), Verified: true},
			[]string{"flushed by vLLM POST /reset_prefix_cache", "8 prefix group(s) primed (36,864 prompt tokens)", "requested 90.0%, achieved 90.0%, server 89.9%: within 2.0 pp"}},
		{&metrics.PrefixPriming{FlushNote: "no flush endpoint", Groups: 3, Tokens: 1536, Failed: 1, RequestedHitRate: f(0.5), Tolerance: 0.02, AchievedHitRate: f(0.4)},
			[]string{"cache not flushed", "1 failed", "requested 50.0%, achieved 40.0%: NOT within 2.0 pp"}},
	}
	for _, c := range cases {
		s := fixtureSummary("m", "")
		s.PrefixPriming = c.p
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
		flat := strings.Join(strings.Fields(term.String()), " ")
		for _, w := range c.want {
			if !strings.Contains(flat, w) || !strings.Contains(strings.ReplaceAll(md.String(), `\`, ""), w) {
				t.Errorf("terminal or markdown lacks %q:\n%s\n%s", w, term.String(), md.String())
			}
		}
		h := html.String()
		if !strings.Contains(h, "Prefix priming (before the measured window)") || !strings.Contains(h, fmtPct(*c.p.RequestedHitRate)) {
			t.Errorf("HTML lacks the priming table")
		}
	}
}

// TestServerPrefixCachePerServer: a figure combined from several servers lists each one's
// share in every report.
func TestServerPrefixCachePerServer(t *testing.T) {
	s := fixtureSummary("m", "")
	s.ServerPrefixCache = &metrics.ServerPrefixCache{Backend: "vllm", Available: true, Hits: 17000, Queries: 30000, HitRate: 17.0 / 30,
		Endpoints: []metrics.ServerPrefixCacheEndpoint{
			{Endpoint: "http://a:8000/metrics", Available: true, Hits: 15000, Queries: 20000, HitRate: 0.75},
			{Endpoint: "http://b:8000/metrics", Available: true, Hits: 2000, Queries: 10000, HitRate: 0.2},
			{Endpoint: "http://c:8000/metrics", Note: "TGI exports no prefix-cache counters"}}}
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
	flat := strings.Join(strings.Fields(term.String()), " ")
	for _, w := range []string{"server 56.7%", "per server: http://a:8000/metrics 75.0% (15,000 of 20,000), http://b:8000/metrics 20.0% (2,000 of 10,000), http://c:8000/metrics no figure"} {
		if !strings.Contains(flat, w) || !strings.Contains(strings.ReplaceAll(md.String(), `\`, ""), w) {
			t.Errorf("terminal or markdown lacks %q:\n%s", w, term.String())
		}
	}
	if !strings.Contains(html.String(), "http://b:8000/metrics 20.0%") {
		t.Error("HTML lacks the per-server rows")
	}
}
