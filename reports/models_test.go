package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

func modelSummary(ttftP99 float64) *metrics.ClassSummary {
	c := &metrics.ClassSummary{Requests: metrics.Requests{Total: 120, Failed: 3, Succeeded: 117}}
	c.Latency.TTFT = metrics.Dist{Count: 117, P50: ttftP99 / 2, P99: ttftP99}
	c.Latency.TPOT = metrics.Dist{Count: 117, P50: 11, P99: 14}
	c.Latency.E2E = metrics.Dist{Count: 117, P50: 900, P99: 1500}
	c.Throughput.OutputTokensPerS = 2500
	return c
}

// Every run report shows the per-model table when the run sent more than one model, and
// none with one; every comparison report shows both sides per model.
func TestReportsShowModels(t *testing.T) {
	s := &metrics.Summary{ByModel: map[string]*metrics.ClassSummary{
		metrics.DefaultModelKey: modelSummary(80), "sql-lora<x>": modelSummary(612.5)}}
	var term, md, page bytes.Buffer
	if err := WriteTerminal(&term, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, s, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"terminal": term.String(), "markdown": md.String(), "html": page.String()} {
		if !strings.Contains(out, "612.5") || !strings.Contains(out, "--model") {
			t.Errorf("%s: no per-model row with TTFT p99 612.5:\n%s", name, out)
		}
	}
	if !strings.Contains(page.String(), "sql-lora&lt;x&gt;") || strings.Contains(page.String(), "sql-lora<x>") {
		t.Error("html: the model name is not escaped")
	}
	one := &metrics.Summary{ByModel: nil}
	term.Reset()
	if err := WriteTerminal(&term, one); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(term.String(), "Model (ms)") {
		t.Error("terminal: a per-model table for a run of one model")
	}

	c := &metrics.Comparison{Base: metrics.ComparisonSide{Label: "2 slots"}, Cand: metrics.ComparisonSide{Label: "4 slots"},
		ByModel: metrics.CompareModels(s, &metrics.Summary{ByModel: map[string]*metrics.ClassSummary{"sql-lora<x>": modelSummary(95)}})}
	var cterm, cmd, cpage bytes.Buffer
	if err := WriteComparisonTerminal(&cterm, c); err != nil {
		t.Fatal(err)
	}
	if err := WriteComparisonMarkdown(&cmd, c); err != nil {
		t.Fatal(err)
	}
	if err := WriteComparisonHTML(&cpage, c, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"terminal": cterm.String(), "markdown": cmd.String(), "html": cpage.String()} {
		if !strings.Contains(out, "612.5 → 95.00") || !strings.Contains(out, "80.00 → -") {
			t.Errorf("comparison %s: no per-model pair rows:\n%s", name, out)
		}
	}
}
