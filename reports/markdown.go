package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// mdEscape makes outside text inert in Markdown: HTML is entity-escaped (GitHub renders raw
// HTML in comments) and Markdown punctuation is backslash-escaped; newlines become spaces so
// text cannot break out of a table cell.
func mdEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\\', '`', '*', '_', '[', ']', '(', ')', '#', '|', '!', '~', '{', '}':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		default:
			if r < 0x20 || r == 0x7f {
				b.WriteByte('?')
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdRow writes one Markdown table row from already-escaped cells.
func (e *errWriter) mdRow(cells ...string) {
	e.printf("| %s |\n", strings.Join(cells, " | "))
}

// mdHeader writes a table header with the first column left-aligned and the rest right-aligned.
func (e *errWriter) mdHeader(cells ...string) {
	e.mdRow(cells...)
	seps := make([]string, len(cells))
	for i := range seps {
		seps[i] = "---:"
		if i == 0 {
			seps[i] = ":---"
		}
	}
	e.mdRow(seps...)
}

// WriteMarkdown writes s as GitHub-flavoured Markdown for a pull-request or CI comment.
func WriteMarkdown(w io.Writer, s *metrics.Summary) error {
	if s == nil {
		return fmt.Errorf("reports: WriteMarkdown: nil summary")
	}
	e := &errWriter{w: w}
	mark := "✅"
	if !healthy(s) {
		mark = "⚠️"
	}
	e.printf("### %s llmbench: %s\n\n", mark, mdEscape(Headline(s)))
	e.printf("%s\n\n", mdEscape(runLine(s.Run)))
	if len(s.Warnings) > 0 {
		e.printf("**Warnings**\n\n")
		for _, wn := range s.Warnings {
			e.printf("- %s\n", mdEscape(wn))
		}
		e.printf("\n")
	}
	e.mdHeader("Requests", "ok", "failed", "req/s", "input tok/s", "output tok/s", "goodput req/s", "within SLO")
	e.mdRow(fmtInt(int64(s.Requests.Total)), fmtInt(int64(s.Requests.Succeeded)), fmtInt(int64(s.Requests.Failed)),
		fmtRate(s.Throughput.RequestsPerS), fmtRate(s.Throughput.InputTokensPerS), fmtRate(s.Throughput.OutputTokensPerS),
		goodputRate(s.Goodput), goodputCell(s.Goodput))
	e.printf("\n")
	writeMarkdownLatency(e, s.Latency, s.Requests)
	e.printf("\n")
	e.printf("- **Stalls:** %s\n", mdEscape(stallsLine(s.Stalls)))
	if s.TokensPerChunk.Count > 0 {
		e.printf("- **Chunks:** %s\n", mdEscape(chunksLine(s)))
	}
	e.printf("- **Fluidity:** %s\n", mdEscape(fluidityLine(s.Fluidity)))
	e.printf("- **Goodput:** %s\n", mdEscape(goodputLine(s.Goodput, s.Requests.Total-s.Requests.Cancelled)))
	e.printf("- **Client:** %s\n", mdEscape(clientLine(s.Client)))
	e.printf("- **Tokens:** %s\n", mdEscape(tokensLine(s.Requests)))
	if s.Inputs != nil {
		e.printf("- **Inputs:** %s\n", mdEscape(inputsLine(s.Inputs, s.Run.PromptSizing)))
	}
	if s.PrefixCache != nil {
		e.printf("- **Prefix cache:** %s\n", mdEscape(prefixCacheLine(s.PrefixCache)))
	}
	if s.Requests.Failed > 0 {
		e.printf("- **Failures:** %s\n", mdEscape(failuresText(s.Requests)))
		for _, line := range failureMessageLines(s.Requests) {
			e.printf("  - %s\n", mdEscape(line))
		}
	}
	if s.Cost != nil {
		e.printf("- **Cost:** %s\n", mdEscape(costLine(s.Cost)))
	}
	writeMarkdownIssue38(e, s) // cancelled.go: cancellations and speculative acceptance
	if s.ServerPrefixCache != nil {
		e.printf("- **Prefix cache:** %s\n", mdEscape(serverPrefixCacheLine(s.ServerPrefixCache)))
	}
	if s.PrefixPriming != nil {
		e.printf("- **Prefix priming:** %s\n", mdEscape(prefixPrimingLine(s.PrefixPriming)))
	}
	if s.Energy != nil {
		e.printf("- **Energy:** %s\n", mdEscape(energyLine(s.Energy))) // issue 39: energy.go
	}
	if q := s.Quality; q != nil && q.Graded > 0 { // quality (issue 17)
		line := qualityCore(q)
		if f := gradeFailures(q.Failures); f != "" {
			line += " · failed: " + f
		}
		e.printf("- **Quality:** %s\n", mdEscape(line))
	}
	if q := s.Quality; q != nil && q.Judge != nil {
		e.printf("- **Judge:** %s\n", mdEscape(judgeLine(q.Judge)))
	}
	if len(s.ByClass) > 1 {
		e.printf("\n")
		e.mdHeader("Class", "requests", "failed", "req/s", "TTFT p50", "TTFT p99", "TPOT p99", "ITL p99", "E2E p99", "within SLO")
		for _, name := range sortedKeys(s.ByClass) {
			c := s.ByClass[name]
			if c == nil {
				continue
			}
			e.mdRow(mdEscape(name), fmtInt(int64(c.Requests.Total)), fmtInt(int64(c.Requests.Failed)),
				fmtRate(c.Throughput.RequestsPerS), fmtDistMs(c.Latency.TTFT, c.Latency.TTFT.P50),
				fmtDistMs(c.Latency.TTFT, c.Latency.TTFT.P99), fmtDistMs(c.Latency.TPOT, c.Latency.TPOT.P99),
				fmtDistMs(c.Latency.ITL, c.Latency.ITL.P99), fmtDistMs(c.Latency.E2E, c.Latency.E2E.P99),
				goodputCell(c.Goodput))
		}
	}
	writeMarkdownModels(e, s.ByModel) // per-request model (issue 38)
	return e.err
}

func writeMarkdownLatency(e *errWriter, l metrics.Latency, q metrics.Requests) {
	head := []string{"Latency (ms)"}
	for _, st := range distStats {
		head = append(head, st.Label)
	}
	e.mdHeader(append(head, "count")...)
	for _, row := range latencyRows(l) {
		if row.Key == "normalized" {
			continue
		}
		cells := []string{row.Label}
		for _, st := range distStats {
			cells = append(cells, fmtDistMs(row.D, st.Get(row.D)))
		}
		e.mdRow(append(cells, fmtInt(row.D.Count))...)
	}
	if c := latencyCoverage(q); c != "" {
		e.printf("\n%s\n", mdEscape(c))
	}
}

func goodputRate(g metrics.Goodput) string {
	if len(g.SLO) == 0 && len(g.ClassSLO) == 0 {
		return "-"
	}
	return fmtRate(g.RequestsPerS)
}

// failuresText lists failure kinds and HTTP statuses by count.
func failuresText(q metrics.Requests) string {
	var parts []string
	for _, k := range countsByValue(q.Failures) {
		parts = append(parts, fmt.Sprintf("%s %s", k, fmtInt(int64(q.Failures[k]))))
	}
	s := strings.Join(parts, ", ")
	if len(q.FailStatus) > 0 {
		var st []string
		for _, k := range countsByValue(q.FailStatus) {
			st = append(st, fmt.Sprintf("HTTP %s × %s", k, fmtInt(int64(q.FailStatus[k]))))
		}
		s += " (" + strings.Join(st, ", ") + ")"
	}
	return s
}
