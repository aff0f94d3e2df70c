package refengine

import (
	"strings"
	"testing"
)

// TestJudgeVerdicts: the judge mode's documented rule, on prompts shaped like quality/judge's.
func TestJudgeVerdicts(t *testing.T) {
	rubric := func(r, ans string) string {
		return judgeMarker + " rubric]\nGrade.\n\nRubric:\n" + r + "\n\nQuestion:\n<<<QUESTION\nq\nQUESTION>>>\n\nAnswer:\n<<<ANSWER\n" + ans + "\nANSWER>>>\n\nEnd with VERDICT."
	}
	pair := func(a, b string) string {
		return judgeMarker + " pairwise]\nRubric:\nr\n\nQuestion:\n<<<QUESTION\nq\nQUESTION>>>\n\nAnswer 1:\n<<<ANSWER 1\n" + a + "\nANSWER 1>>>\n\nAnswer 2:\n<<<ANSWER 2\n" + b + "\nANSWER 2>>>\n"
	}
	for _, c := range []struct{ prompt, want string }{
		{rubric(`Say "Paris" and "France".`, "Paris is in France."), "VERDICT: PASS"},
		{rubric(`Say "Paris" and "France".`, "Paris."), "VERDICT: FAIL"},
		{rubric("Be correct.", "anything"), "VERDICT: PASS"},
		{rubric("Be correct.", "  "), "VERDICT: FAIL"},
		{pair("short", "much longer"), "VERDICT: 2"},
		{pair("a longer one", "tiny"), "VERDICT: 1"},
		{pair("same", "same"), "VERDICT: TIE"},
		{pair("abcd", "wxyz"), "VERDICT: 1"}, // equal length: the first shown (position bias)
		{pair("wxyz", "abcd"), "VERDICT: 1"},
	} {
		a := judgeAnswer("system text\n"+c.prompt+"\n", false)
		if a == nil || !a.structured {
			t.Fatalf("no judge answer for %q", c.prompt)
		}
		text := strings.Join(a.toks, "")
		if !strings.HasSuffix(text, c.want) || !strings.Contains(text, "\n") {
			t.Errorf("%q:\n got %q, want …%s", c.prompt, text, c.want)
		}
	}
	if judgeAnswer("What is the capital?", false) != nil {
		t.Error("a prompt without the marker got a verdict")
	}
}
