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
	for _, seed := range []string{
		"<script>alert(1)</script>", "</script><script>x()</script>", `"><img src=x onerror=alert(1)>`,
		"\x1b[31mred\x1b[0m", "a|b`c*d_e[f](g)", "]]></style>", "{{.Title}}", "\u2028\u2029", "plain",
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

// planted is the fixture summary with text in every outside-text field.
func planted(text string) *metrics.Summary {
	s := fixtureSummary(text, text)
	s.Run.Endpoint = text
	s.ByClass[text] = s.ByClass["chat"]
	return s
}

func plantedHTML(t testing.TB, text string) string {
	t.Helper()
	recs := fixtureRecords(30)
	recs[13].Error = text
	recs[13].ID = text
	var h bytes.Buffer
	if err := WriteHTML(&h, planted(text), HTMLOptions{Samples: recs[12:15], Getenv: noEnv}); err != nil {
		t.Fatal(err)
	}
	return h.String()
}
