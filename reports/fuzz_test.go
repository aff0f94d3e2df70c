package reports

import (
	"bytes"

	"github.com/llmbench/llmbench/metrics"
	"strings"
	"testing"
	"unicode"
)

// FuzzOutsideTextIsInert plants arbitrary text where outside data goes (model name, warning,
// class name, error message) and checks that no output format lets it act: HTML keeps its
// two script elements and never contains the text raw when it has markup, Markdown never
// carries a raw '<', and the terminal never receives a control character.
func FuzzOutsideTextIsInert(f *testing.F) {
	// Short seeds: every input that finds new coverage is minimized byte by byte at several
	// milliseconds per execution (a whole HTML report), so short inputs keep the fuzzer
	// exploring within CI's two seconds instead of minimizing.
	for _, seed := range []string{
		"<b>", "</script>", `"'><`, "\x1b[m", "|`*_[", "]]>", "{{.}}", "\u2028", "x",
	} {
		f.Add(seed)
	}
	neutral := plantedHTML(f, "neutral")
	f.Fuzz(func(t *testing.T, text string) {
		s := planted(text)
		out := plantedHTML(t, text)
		if n := strings.Count(strings.ToLower(out), "<script"); n != 2 {
			t.Fatalf("HTML has %d <script elements, want 2", n)
		}
		// Differential: markup-bearing text must not appear raw unless the page has it anyway.
		if strings.Contains(text, "<") && strings.Contains(out, text) && !strings.Contains(neutral, text) {
			t.Fatalf("HTML contains the planted text raw: %q", text)
		}
		var m bytes.Buffer
		if err := WriteMarkdown(&m, s); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(m.String(), "<") {
			t.Fatalf("Markdown contains a raw '<'")
		}
		var term bytes.Buffer
		if err := WriteTerminal(&term, s); err != nil {
			t.Fatal(err)
		}
		for _, r := range term.String() {
			if r != '\n' && unicode.IsControl(r) {
				t.Fatalf("terminal output contains control character %U", r)
			}
		}
	})
}

// planted is the fixture summary with text in every outside-text field. Its time series is
// cut to a few buckets: the charts then cost little, so the fuzzer runs many inputs in CI's
// short budget, and every place outside text goes is still there.
func planted(text string) *metrics.Summary {
	s := fixtureSummary(text, text)
	s.TimeSeries = fixtureSeries(8)
	s.Run.Endpoint = text
	s.ByClass = map[string]*metrics.ClassSummary{text: s.ByClass["chat"]}
	return s
}

func plantedHTML(t testing.TB, text string) string {
	t.Helper()
	recs := fixtureRecords(3)
	recs[1].Error = text
	recs[1].ID = text
	var h bytes.Buffer
	if err := WriteHTML(&h, planted(text), HTMLOptions{Samples: recs, Getenv: noEnv}); err != nil {
		t.Fatal(err)
	}
	return h.String()
}
