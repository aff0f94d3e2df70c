package reports

import (
	"bytes"
	"strings"
	"testing"
)

func planFixture() *Plan {
	p := &Plan{Title: "plan", Headline: "cheapest: 2 × h100", Good: true, Target: 0.9, Currency: "USD",
		Facts: [][2]string{{"Trace", "t.jsonl <b>"}}}
	add := func(dep string, gpus int, price, cost, good float64, bound bool, verdict string) {
		p.Rows = append(p.Rows, PlanRow{Deployment: dep, GPUs: gpus, PricePerHour: price, CostPerMTokens: cost, Goodput: good, Bound: bound, Verdict: verdict})
	}
	for i := 0; i < 10; i++ {
		add("1 × cheap"+string(rune('a'+i)), 1, 1, 0, 0.899, true, "misses")
	}
	add("2 × h100 <script>", 2, 5, 0.02, 0.99, false, "chosen")
	add("3 × h100", 3, 7.5, 0.03, 1, false, "meets, not the fewest")
	add("2 × h200", 2, 7, 0.03, 1, false, "meets")
	p.Rows = append(p.Rows, PlanRow{Deployment: "a100 bf16 TP=1", Verdict: "ruled out", Note: "does not fit"})
	return p
}

// TestPlanTerminal: the choice, the runner-ups that are the fewest of their shape and the
// cheaper misses nearest the choice, in price order, goodput bounds marked.
func TestPlanTerminal(t *testing.T) {
	var b bytes.Buffer
	if err := WritePlanTerminal(&b, planFixture()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"2 × h100 <script>", "chosen", "2 × h200", "≤ 89.9%", "1 × cheapj", "(4 more candidates"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"1 × cheapa", "3 × h100", "ruled out"} {
		if strings.Contains(out, not) {
			t.Errorf("shows %q:\n%s", not, out)
		}
	}
	if strings.Index(out, "1 × cheapj") > strings.Index(out, "chosen") {
		t.Errorf("misses should come before the (dearer) choice:\n%s", out)
	}
}

// TestPlanHTML: every candidate is in the table, outside text is escaped, the chart is there.
func TestPlanHTML(t *testing.T) {
	var b bytes.Buffer
	if err := WritePlanHTML(&b, planFixture(), HTMLOptions{Getenv: func(string) string { return "" }}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<script>\"") || strings.Contains(page, "h100 <script>") || strings.Contains(page, "t.jsonl <b>") {
		t.Error("outside text is not escaped")
	}
	for _, want := range []string{`id="candidates"`, "plan-goodput-price", "1 × cheapa", "does not fit", "meets, not the fewest"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
