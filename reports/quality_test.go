package reports

import (
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestQualityRendering: the quality block shows in the terminal table and the HTML report,
// with hostile text from the outside (a request id in an example) escaped.
func TestQualityRendering(t *testing.T) {
	s := fixtureSummary("m", "")
	s.Quality = &metrics.Quality{
		QualityCounts: metrics.QualityCounts{Graded: 200, Passed: 170, PassRate: 0.85, CILow: 0.80, CIHigh: 0.895,
			Failures: map[string]int{metrics.GradeTool: 20, metrics.GradeFormat: 10}},
		Confidence: 0.95, Resamples: 10000,
		Examples: map[string]string{metrics.GradeTool: "q7<script>\x1b[31m: expect[0] tool_call: no tool call"},
		ByClass: map[string]metrics.QualityCounts{
			"json":  {Graded: 100, Passed: 90, PassRate: 0.9, CILow: 0.84, CIHigh: 0.95, Failures: map[string]int{metrics.GradeFormat: 10}},
			"tools": {Graded: 100, Passed: 80, PassRate: 0.8, CILow: 0.72, CIHigh: 0.87, Failures: map[string]int{metrics.GradeTool: 20}},
		},
		Judge: &metrics.JudgeSummary{Model: "judge-m", Mode: "rubric", Judged: 200, Errors: 2, Passed: 150, PassRate: 150.0 / 198,
			CILow: 0.7, CIHigh: 0.81, PromptTokens: 123456, CompletionTokens: 7890, Calls: 200},
	}
	var term strings.Builder
	if err := WriteTerminal(&term, s); err != nil {
		t.Fatal(err)
	}
	out := term.String()
	for _, want := range []string{"Quality     85.0% pass (170 of 200 graded) · 95% CI 80.0%–89.5%\n            failed: format 10, tool 20\n",
		"e.g. tool: q7<script>", "tools                  100      80     80.0%", "Judge       rubric via judge-m: 150 of 198 pass",
		"123,456 prompt + 7,890 completion tokens"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Error("terminal: an escape sequence from an example reached the output")
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "- **Quality:** 85.0% pass \\(170 of 200 graded\\)") || !strings.Contains(md.String(), "- **Judge:** rubric via judge-m") {
		t.Errorf("markdown:\n%s", md.String())
	}
	var html strings.Builder
	if err := WriteHTML(&html, s, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	h := html.String()
	for _, want := range []string{`id="quality"`, "Quality under load", "85.0%", "format 10, tool 20", "q7&lt;script&gt;", "LLM judge: rubric via judge-m"} {
		if !strings.Contains(h, want) {
			t.Errorf("html: no %q", want)
		}
	}
	if strings.Contains(h, "q7<script>") {
		t.Error("html: an example was not escaped")
	}
}

func TestPairedQualityText(t *testing.T) {
	got := pairedQualityText(&metrics.QualityComparison{Paired: 300, BaseRate: 0.96, CandRate: 0.9, Delta: -0.06, CILow: -0.09, CIHigh: -0.035,
		BaseOnly: 20, CandOnly: 2, Confidence: 0.95, CandFailures: map[string]int{metrics.GradeTool: 30}})
	want := "300 requests graded on both sides: 96.0% → 90.0%, -6.0 pp (95% paired bootstrap CI -9.0 to -3.5 pp); passed on base only 20, on candidate only 2 · candidate failed: tool 30"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
