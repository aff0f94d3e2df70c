package reports

import (
	"fmt"

	"github.com/llmbench/llmbench/metrics"
)

// Per-model breakdown (issue 38): the headline numbers per model or LoRA adapter, in every
// run report when the run sent more than one (Summary.ByModel), and both sides' numbers per
// model in every comparison report (Comparison.ByModel).

// writeTermModels prints the per-model table of a run.
func writeTermModels(e *errWriter, byModel map[string]*metrics.ClassSummary) {
	if len(byModel) <= 1 {
		return
	}
	e.printf("\n%-18s%9s%8s%10s%10s%10s%10s%10s%10s%10s\n", "Model (ms)", "requests", "failed",
		"tok/s", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p50", "E2E p99")
	for _, name := range sortedKeys(byModel) {
		c := byModel[name]
		if c == nil {
			continue
		}
		l := c.Latency
		e.printf("%-18s%s%s%s%s%s%s%s%s%s\n", clip(termSafe(name), 17),
			col(9, fmtInt(int64(c.Requests.Total))), col(8, fmtInt(int64(c.Requests.Failed))),
			col(10, fmtRate(c.Throughput.OutputTokensPerS)),
			col(10, fmtDistMs(l.TTFT, l.TTFT.P50)), col(10, fmtDistMs(l.TTFT, l.TTFT.P99)),
			col(10, fmtDistMs(l.TPOT, l.TPOT.P50)), col(10, fmtDistMs(l.TPOT, l.TPOT.P99)),
			col(10, fmtDistMs(l.E2E, l.E2E.P50)), col(10, fmtDistMs(l.E2E, l.E2E.P99)))
	}
}

// writeMarkdownModels writes the per-model table of a run.
func writeMarkdownModels(e *errWriter, byModel map[string]*metrics.ClassSummary) {
	if len(byModel) <= 1 {
		return
	}
	e.printf("\n")
	e.mdHeader("Model", "requests", "failed", "output tok/s", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p50", "E2E p99")
	for _, name := range sortedKeys(byModel) {
		c := byModel[name]
		if c == nil {
			continue
		}
		l := c.Latency
		e.mdRow(mdEscape(name), fmtInt(int64(c.Requests.Total)), fmtInt(int64(c.Requests.Failed)),
			fmtRate(c.Throughput.OutputTokensPerS), fmtDistMs(l.TTFT, l.TTFT.P50), fmtDistMs(l.TTFT, l.TTFT.P99),
			fmtDistMs(l.TPOT, l.TPOT.P50), fmtDistMs(l.TPOT, l.TPOT.P99), fmtDistMs(l.E2E, l.E2E.P50), fmtDistMs(l.E2E, l.E2E.P99))
	}
}

// modelSection is the run report's per-model section (ok false with one model).
func modelSection(s *metrics.Summary) (section, bool) {
	if len(s.ByModel) <= 1 {
		return section{}, false
	}
	t := &table{Numeric: true, Head: []string{"model", "requests", "failed", "req/s", "output tok/s", "TTFT p50", "TTFT p99",
		"TPOT p50", "TPOT p99", "E2E p50", "E2E p99"}}
	for _, name := range sortedKeys(s.ByModel) {
		c := s.ByModel[name]
		if c == nil {
			continue
		}
		l := c.Latency
		t.add(txt(name), keyed("model."+name+".requests", fmtInt(int64(c.Requests.Total))), txt(fmtInt(int64(c.Requests.Failed))),
			txt(fmtRate(c.Throughput.RequestsPerS)), txt(fmtRate(c.Throughput.OutputTokensPerS)),
			txt(fmtDistMs(l.TTFT, l.TTFT.P50)), keyed("model."+name+".ttft.p99", fmtDistMs(l.TTFT, l.TTFT.P99)),
			txt(fmtDistMs(l.TPOT, l.TPOT.P50)), txt(fmtDistMs(l.TPOT, l.TPOT.P99)),
			txt(fmtDistMs(l.E2E, l.E2E.P50)), txt(fmtDistMs(l.E2E, l.E2E.P99)))
	}
	return section{ID: "models", Title: "By model", Intro: "Latencies in ms, per model or LoRA adapter the requests named (" +
		metrics.DefaultModelKey + ": the run's --model).", Blocks: []block{{Table: t}}}, true
}

// modelPairRows are a comparison's per-model rows: model, then base and candidate for each
// headline number.
func modelPairRows(c *metrics.Comparison) (head []string, rows [][]string) {
	head = []string{"model", "requests", "failed", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p50", "E2E p99", "output tok/s"}
	pair := func(b, c *metrics.ModelNumbers, get func(*metrics.ModelNumbers) string) string {
		side := func(n *metrics.ModelNumbers) string {
			if n == nil {
				return "-"
			}
			return get(n)
		}
		return side(b) + " → " + side(c)
	}
	for _, d := range c.ByModel {
		f := func(get func(*metrics.ModelNumbers) float64) string {
			return pair(d.Base, d.Cand, func(n *metrics.ModelNumbers) string { return fmtMs(get(n)) })
		}
		rows = append(rows, []string{d.Model,
			pair(d.Base, d.Cand, func(n *metrics.ModelNumbers) string { return fmtInt(int64(n.Requests)) }),
			pair(d.Base, d.Cand, func(n *metrics.ModelNumbers) string { return fmtInt(int64(n.Failed)) }),
			f(func(n *metrics.ModelNumbers) float64 { return n.TTFTP50 }), f(func(n *metrics.ModelNumbers) float64 { return n.TTFTP99 }),
			f(func(n *metrics.ModelNumbers) float64 { return n.TPOTP50 }), f(func(n *metrics.ModelNumbers) float64 { return n.TPOTP99 }),
			f(func(n *metrics.ModelNumbers) float64 { return n.E2EP50 }), f(func(n *metrics.ModelNumbers) float64 { return n.E2EP99 }),
			f(func(n *metrics.ModelNumbers) float64 { return n.OutputTokens })})
	}
	return head, rows
}

// writeTermModelPairs prints a comparison's per-model rows, one line per model (the
// Markdown and HTML reports have every column).
func writeTermModelPairs(e *errWriter, c *metrics.Comparison) {
	if len(c.ByModel) == 0 {
		return
	}
	head, rows := modelPairRows(c)
	cols := []int{1, 2, 3, 4, 6, 8} // requests, failed, TTFT p50/p99, TPOT p99, E2E p99
	widths := []int{11, 8, 17, 17, 15, 17}
	e.printf("\nBy model (base → candidate, ms)\n%-14s", "model")
	for i, k := range cols {
		e.printf("%s", col(widths[i], head[k]))
	}
	e.printf("\n")
	for _, r := range rows {
		e.printf("%-14s", clip(termSafe(r[0]), 13))
		for i, k := range cols {
			e.printf("%s", col(widths[i], r[k]))
		}
		e.printf("\n")
	}
}

// writeMarkdownModelPairs writes a comparison's per-model table.
func writeMarkdownModelPairs(e *errWriter, c *metrics.Comparison) {
	if len(c.ByModel) == 0 {
		return
	}
	head, rows := modelPairRows(c)
	e.printf("\n**By model** (base → candidate; ms, output tokens/s)\n\n")
	e.mdHeader(head...)
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, x := range r {
			cells[i] = mdEscape(x)
		}
		e.mdRow(cells...)
	}
}

// modelPairSection is the comparison report's per-model section (ok false without one).
func modelPairSection(c *metrics.Comparison) (section, bool) {
	if len(c.ByModel) == 0 {
		return section{}, false
	}
	head, rows := modelPairRows(c)
	t := &table{Numeric: true, Head: head}
	for _, r := range rows {
		cells := make([]cell, len(r))
		for i, x := range r {
			cells[i] = txt(x)
		}
		t.add(cells...)
	}
	return section{ID: "models", Title: "By model", Intro: fmt.Sprintf("Each model's headline numbers, %s → %s (ms; output tokens/s); point values from each side's by_model block, no intervals.",
		c.Base.Label, c.Cand.Label), Blocks: []block{{Table: t}}}, true
}
