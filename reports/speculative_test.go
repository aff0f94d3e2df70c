package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestSpeculativeShownEverywhere: the server's acceptance, the client's bursts and their
// agreement appear in the terminal, Markdown and HTML reports, and in a comparison side's facts.
func TestSpeculativeShownEverywhere(t *testing.T) {
	s := fixtureSummary("m", "")
	s.Speculative = &metrics.Speculative{
		Server: &metrics.ServerSpeculative{Available: true, Backend: "vllm", Source: "vllm:spec_decode_*", Drafts: 1000, DraftTokens: 4000, Accepted: 1773,
			AcceptanceRate: 0.44325, MeanAcceptedLength: 2.773},
		Client: metrics.ClientBursts{Bursts: 950, TokensPerBurst: 2.79, StdErr: 0.04},
		Agree:  "agree", Comparison: "the server's counters: mean accepted length 2.773 per pass",
	}
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
	for name, out := range map[string]string{"terminal": term.String(), "markdown": md.String()} {
		flat := strings.ReplaceAll(strings.Join(strings.Fields(out), " "), `\`, "")
		for _, want := range []string{"server counters: acceptance 44.3%, 2.77 tokens per pass", "client: 2.79 tokens per decode burst ± 0.040 (950 bursts)", "· agree"} {
			if !strings.Contains(flat, want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
	}
	for _, want := range []string{`data-k="speculative.server.acceptance_rate">44.3%`, `data-k="speculative.client.tokens_per_burst">2.790 ± 0.040`, `>agree<`} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	side := metrics.ComparisonSide{Label: "B", Runs: 2, Requests: 10, Succeeded: 10, Summary: s}
	if got := sideText(side); !strings.HasSuffix(got, "· acceptance 44.3%, 2.77 tokens/pass (server counters)") {
		t.Errorf("side facts %q", got)
	}
	s.Speculative = nil
	if got := sideText(side); strings.Contains(got, "acceptance") {
		t.Errorf("side without speculative decoding: %q", got)
	}
}
