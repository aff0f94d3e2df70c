package refengine

import (
	"fmt"
	"strings"
)

// Judge mode (documented in the package doc, "Judge"): a request whose prompt carries
// judgeMarker (the prompts of package quality/judge) is answered with a deterministic verdict,
// so that llmbench's LLM-as-judge pipeline can be tested against `serve` without a model:
//
//   - rubric ("[llmbench-judge v1 rubric]"): PASS when the answer (between "<<<ANSWER" and
//     "ANSWER>>>") is not empty and contains every phrase the rubric puts in double quotes,
//     FAIL otherwise;
//   - pairwise ("[llmbench-judge v1 pairwise]"): the longer answer (in bytes, white space at
//     the ends trimmed) wins; answers of equal length tie when they are equal and otherwise go
//     to the answer shown first, a position bias that the order swap of quality/judge must
//     catch (such a pair is inconsistent and counts for neither side).
//
// The answer is a few sentences of reasoning and then the verdict line ("VERDICT: PASS",
// "VERDICT: 2", ...), and ends there (no ignore_eos padding).
const judgeMarker = "[llmbench-judge v1"

// judgeAnswer returns the verdict answer of a judge prompt, or nil when text is none.
func judgeAnswer(text string, lead bool) *answer {
	at := strings.Index(text, judgeMarker)
	if at < 0 {
		return nil
	}
	text = text[at:]
	var s string
	switch {
	case strings.HasPrefix(text, judgeMarker+" rubric]"):
		s = rubricVerdict(between(text, "Rubric:\n", "\n\nQuestion:"), between(text, "<<<ANSWER\n", "\nANSWER>>>"))
	case strings.HasPrefix(text, judgeMarker+" pairwise]"):
		s = pairVerdict(between(text, "<<<ANSWER 1\n", "\nANSWER 1>>>"), between(text, "<<<ANSWER 2\n", "\nANSWER 2>>>"))
	default:
		return nil
	}
	a := textAnswer(ansText, s, lead)
	a.structured = true
	return a
}

// between returns the text after the first open and before the next close ("" if absent).
func between(text, open, close string) string {
	i := strings.Index(text, open)
	if i < 0 {
		return ""
	}
	rest := text[i+len(open):]
	j := strings.Index(rest, close)
	if j < 0 {
		return ""
	}
	return rest[:j]
}

func rubricVerdict(rubric, ans string) string {
	ans = strings.TrimSpace(ans)
	if ans == "" {
		return "The answer is empty, so it cannot meet the rubric.\nVERDICT: FAIL"
	}
	var phrases []string
	for rest := rubric; ; {
		i := strings.IndexByte(rest, '"')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i+1:], '"')
		if j < 0 {
			break
		}
		phrases = append(phrases, rest[i+1:i+1+j])
		rest = rest[i+2+j:]
	}
	for _, p := range phrases {
		if !strings.Contains(ans, p) {
			return fmt.Sprintf("The rubric requires the phrase %q, which the answer does not contain.\nVERDICT: FAIL", p)
		}
	}
	return fmt.Sprintf("The answer has %d words and contains all %d phrases the rubric requires.\nVERDICT: PASS", len(strings.Fields(ans)), len(phrases))
}

func pairVerdict(first, second string) string {
	a, b := strings.TrimSpace(first), strings.TrimSpace(second)
	switch {
	case len(a) > len(b):
		return fmt.Sprintf("Answer 1 is longer (%d bytes against %d), so it covers more.\nVERDICT: 1", len(a), len(b))
	case len(b) > len(a):
		return fmt.Sprintf("Answer 2 is longer (%d bytes against %d), so it covers more.\nVERDICT: 2", len(b), len(a))
	case a == b:
		return "The answers are the same.\nVERDICT: TIE"
	default:
		return "The answers are equally long; the first one reads better.\nVERDICT: 1"
	}
}

// asksQuestion reports whether a prompt text may get an answer: a lookup question or a judge
// prompt.
func asksQuestion(s string) bool {
	return strings.Contains(s, lookupQuestion) || strings.Contains(s, judgeMarker)
}
