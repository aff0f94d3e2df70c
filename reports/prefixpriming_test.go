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
