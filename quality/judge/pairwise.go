package judge

import (
	"context"
	"strings"
)

// Pair is one question answered by both arms of an A/B comparison.
type Pair struct {
	ID, Question, A, B string
}

// Winners of a pairwise verdict.
const (
	WinnerA = "A"
	WinnerB = "B"
	Tie     = "tie"
)

// PairVerdict is the judge's verdict on one Pair, asked twice: with A shown first, then with
// B shown first.
type PairVerdict struct {
	ID string `json:"id"`
	// AFirst and BFirst are the winners the two calls named (WinnerA, WinnerB or Tie; "" when
	// that call failed).
	AFirst string `json:"a_first"`
	BFirst string `json:"b_first"`
	// Consistent is true when both calls named the same winner; Winner is that winner (""
	// when inconsistent or failed: the pair counts for neither side).
	Consistent bool   `json:"consistent"`
	Winner     string `json:"winner,omitempty"`
	Err        string `json:"error,omitempty"`
}

const pairSystem = "You are a strict grader. You compare two answers to the same question against a rubric. Think first, then give your verdict in the exact format asked for."

// PairPrompt is the user message of a pairwise judgement: the marker, the rubric, the
// question and the two answers (numbered by the order shown), and the instruction to reason
// before a constrained verdict line.
func PairPrompt(rubric, question, first, second string) string {
	var b strings.Builder
	b.WriteString(Marker + " pairwise]\n")
	b.WriteString("Decide which answer better meets the rubric.\n\nRubric:\n")
	b.WriteString(rubric)
	b.WriteString("\n\nQuestion:\n<<<QUESTION\n")
	b.WriteString(question)
	b.WriteString("\nQUESTION>>>\n\nAnswer 1:\n<<<ANSWER 1\n")
	b.WriteString(first)
	b.WriteString("\nANSWER 1>>>\n\nAnswer 2:\n<<<ANSWER 2\n")
	b.WriteString(second)
	b.WriteString("\nANSWER 2>>>\n\n")
	b.WriteString("First explain your reasoning in a few sentences, comparing the answers on the rubric (their order and length are no reason). " +
		"Then end with one last line, exactly \"VERDICT: 1\", \"VERDICT: 2\" or \"VERDICT: TIE\", and nothing after it.")
	return b.String()
}

// Pairwise judges every pair twice, order swapped, Concurrency calls at a time.
func Pairwise(ctx context.Context, o Options, pairs []Pair) ([]PairVerdict, Usage) {
	o = o.withDefaults()
	out := make([]PairVerdict, len(pairs))
	// Each pair is two jobs: 2i with A first, 2i+1 with B first.
	winners := make([]string, 2*len(pairs))
	errs := make([]string, 2*len(pairs))
	usages := make([]Usage, 2*len(pairs))
	for i := range errs {
		errs[i] = "not judged (the judging was interrupted)"
	}
	forEach(ctx, 2*len(pairs), o.Concurrency, func(j int) {
		p := pairs[j/2]
		first, second := p.A, p.B
		if j%2 == 1 {
			first, second = p.B, p.A
		}
		text, u, err := o.call(ctx, pairSystem, PairPrompt(o.Rubric, p.Question, first, second))
		usages[j] = u
		var v string
		if err == nil {
			v, _, err = ParseVerdict(text, "1", "2", "TIE")
		}
		if err != nil {
			errs[j] = err.Error()
			return
		}
		errs[j] = ""
		winners[j] = winnerOf(v, j%2 == 1)
	})
	for i, p := range pairs {
		pv := PairVerdict{ID: p.ID, AFirst: winners[2*i], BFirst: winners[2*i+1]}
		switch {
		case errs[2*i] != "":
			pv.Err = errs[2*i]
		case errs[2*i+1] != "":
			pv.Err = errs[2*i+1]
		case pv.AFirst == pv.BFirst:
			pv.Consistent, pv.Winner = true, pv.AFirst
		}
		out[i] = pv
	}
	var total Usage
	for _, u := range usages {
		total.add(u)
	}
	return out, total
}

// winnerOf maps a verdict on the order shown back to the arms.
func winnerOf(v string, bFirst bool) string {
	switch {
	case v == "TIE":
		return Tie
	case (v == "1") != bFirst:
		return WinnerA
	default:
		return WinnerB
	}
}
