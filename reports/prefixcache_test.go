package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestPrefixCacheInEveryReport: the prefix_cache block is a line in the terminal and
// Markdown reports and a table in the HTML one, with the hit rate, who reported it and TTFT
// per reuse bucket; a run whose requests reported nothing shows none of it.
func TestPrefixCacheInEveryReport(t *testing.T) {
	s := fixtureSummary("m", "")
	s.PrefixCache = &metrics.PrefixCache{HitRate: 0.8125, CachedTokens: 65000, PromptTokens: 80000,
		Reported: 80, Succeeded: 100, Sources: []string{metrics.CacheFromPromptDetails},
		TTFTByReuse: []metrics.ReuseBucket{{Bucket: "0", Count: 20, TTFTP50Ms: 200, TTFTP99Ms: 250},
			{Bucket: "(0,50%]"}, {Bucket: "(50,90%]", Count: 20, TTFTP50Ms: 60, TTFTP99Ms: 80},
			{Bucket: ">90%", Count: 40, TTFTP50Ms: 25, TTFTP99Ms: 31}}}
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
	for _, want := range []string{"hit rate 81.2%", "80 of 100 succeeded requests reported it, from prompt_tokens_details",
		">90% 25.00/31.00 ms (40)", "0 200.0/250.0 ms (20)"} {
		if !strings.Contains(flat, want) {
			t.Errorf("terminal report lacks %q:\n%s", want, term.String())
		}
	}
	if strings.Contains(flat, "(0,50%]") {
		t.Errorf("terminal report shows an empty bucket:\n%s", term.String())
	}
	if !strings.Contains(md.String(), "- **Prefix cache:** hit rate 81.2%") {
		t.Errorf("Markdown report lacks the prefix-cache line:\n%s", md.String())
	}
	for _, want := range []string{"Prefix cache (as the server reported it per request)", "TTFT p50 / p99, &gt;90% cached", "no request"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}

	s.PrefixCache = nil
	term.Reset()
	md.Reset()
	html.Reset()
	WriteTerminal(&term, s)
	WriteMarkdown(&md, s)
	WriteHTML(&html, s, HTMLOptions{})
	for name, out := range map[string]string{"terminal": term.String(), "Markdown": md.String(), "HTML": html.String()} {
		if strings.Contains(out, "hit rate") || strings.Contains(out, "Prefix cache") {
			t.Errorf("%s report shows a prefix cache nobody reported", name)
		}
	}
}

// TestPrefixCacheDesignedInEveryReport: the designed rate stands next to the achieved one in
// every report, with the explanation only when achieved is more than 5 pp below it.
func TestPrefixCacheDesignedInEveryReport(t *testing.T) {
	for _, c := range []struct {
		designed float64
		explain  bool
	}{{0.84, false}, {0.90, true}} {
		d := c.designed
		s := fixtureSummary("m", "")
		s.PrefixCache = &metrics.PrefixCache{HitRate: 0.8125, CachedTokens: 65000, PromptTokens: 80000,
			Reported: 80, Succeeded: 80, Sources: []string{metrics.CacheFromEngine},
			DesignedHitRate: &d, DesignedCachedTokens: int64(d * 80000), DesignedPromptTokens: 80000,
			TTFTByReuse: []metrics.ReuseBucket{{Bucket: "0"}, {Bucket: "(0,50%]"}, {Bucket: "(50,90%]"},
				{Bucket: ">90%", Count: 80, TTFTP50Ms: 25, TTFTP99Ms: 31}}}
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
		pct := fmtPct(d)
		for name, out := range map[string]string{"terminal": term.String(), "Markdown": md.String(), "HTML": html.String()} {
			flat := strings.Join(strings.Fields(out), " ")
			if !strings.Contains(flat, "designed") || !strings.Contains(flat, pct) {
				t.Errorf("designed %v: %s report lacks the designed rate %s:\n%s", d, name, pct, out)
			}
			if got := strings.Contains(flat, "the server reused less than the trace offers"); got != c.explain {
				t.Errorf("designed %v: %s report explains the shortfall: %v, want %v", d, name, got, c.explain)
			}
		}
	}
}
