package reports

import (
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestInputsLine: the terminal, Markdown and HTML show the intended and server-counted prompt
// tokens and how prompts were sized, with outside text (the sizing's detail comes from a
// server) escaped; a summary without the check shows no such line.
func TestInputsLine(t *testing.T) {
	s := fixtureSummary("m", "w")
	s.Inputs = &metrics.InputCheck{Requests: 20, Intended: 1280, Counted: 3445, Difference: 1.6914, Outside: 20, MaxDifference: 1.83,
		Tolerance: 0.05, Exceeded: true}
	s.Run.PromptSizing = "server\x1b[2J<b>: word costs from the server's /tokenize"
	var term, md, html strings.Builder
	if err := WriteTerminal(&term, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, s, HTMLOptions{Getenv: noEnv}); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"terminal": term.String(), "markdown": md.String(), "html": html.String()} {
		flat := strings.Join(strings.Fields(out), " ")
		for _, want := range []string{"intended 1,280 · server counted 3,445", "169.1%, tolerance ±5.0%", "over 20 requests · 20 outside", "EXCEEDED · sized by server"} {
			if !strings.Contains(flat, want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
		if strings.Contains(out, "\x1b[2J") || strings.Contains(out, "server\x1b") {
			t.Errorf("%s carries the server's control characters", name)
		}
	}
	if strings.Contains(html.String(), "<b>:") {
		t.Error("html carries the server's markup unescaped")
	}
	s.Inputs = nil
	term.Reset()
	if err := WriteTerminal(&term, s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(term.String(), "Inputs") {
		t.Error("a summary without the input check shows an Inputs line")
	}
}
