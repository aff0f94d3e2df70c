package judge

import (
	"context"
	"strings"
)

// Item is one answer to judge: the request's id, its question (the prompt, or the chat
// messages as text) and the answer text.
type Item struct {
	ID, Question, Answer string
}

// Verdict is the judge's verdict on one Item.
type Verdict struct {
	ID string `json:"id"`
	// Pass is the verdict; it means nothing when Err is set (the call failed or the answer had
	// no verdict line).
	Pass      bool   `json:"pass"`
	Reasoning string `json:"reasoning,omitempty"`
	Err       string `json:"error,omitempty"`
}

const rubricSystem = "You are a strict grader. You grade one answer against a rubric. Think first, then give your verdict in the exact format asked for."

// RubricPrompt is the user message of a rubric judgement: the marker, the rubric, the
// question and the answer between delimiters, and the instruction to reason before a
// constrained verdict line.
func RubricPrompt(rubric, question, answer string) string {
	var b strings.Builder
	b.WriteString(Marker + " rubric]\n")
	b.WriteString("Grade the answer against the rubric.\n\nRubric:\n")
	b.WriteString(rubric)
	b.WriteString("\n\nQuestion:\n<<<QUESTION\n")
	b.WriteString(question)
	b.WriteString("\nQUESTION>>>\n\nAnswer:\n<<<ANSWER\n")
	b.WriteString(answer)
	b.WriteString("\nANSWER>>>\n\n")
	b.WriteString("First explain your reasoning in a few sentences: what the rubric asks, and whether the answer meets it. " +
		"Then end with one last line, exactly \"VERDICT: PASS\" or \"VERDICT: FAIL\", and nothing after it.")
	return b.String()
}

// Rubric judges every item against the rubric, Concurrency at a time, and returns the
// verdicts in item order with the token cost.
func Rubric(ctx context.Context, o Options, items []Item) ([]Verdict, Usage) {
	o = o.withDefaults()
	out := make([]Verdict, len(items))
	usages := make([]Usage, len(items))
	for i := range out {
		out[i] = Verdict{ID: items[i].ID, Err: "not judged (the judging was interrupted)"}
	}
	forEach(ctx, len(items), o.Concurrency, func(i int) {
		it := items[i]
		text, u, err := o.call(ctx, rubricSystem, RubricPrompt(o.Rubric, it.Question, it.Answer))
		usages[i] = u
		v := Verdict{ID: it.ID}
		if err == nil {
			var verdict string
			verdict, v.Reasoning, err = ParseVerdict(text, "PASS", "FAIL")
			v.Pass = verdict == "PASS"
		}
		if err != nil {
			v.Err = err.Error()
		}
		out[i] = v
	})
	var total Usage
	for _, u := range usages {
		total.add(u)
	}
	return out, total
}
