package reports

import (
	"fmt"

	"github.com/llmbench/llmbench/metrics"
)

// Cancellations (issue 38, docs/cancellations.md): requests the client cancelled on purpose
// are shown as an outcome of their own, beside successes and failures, in every report.

// cancelledText says how many requests the client cancelled and their share; their tokens
// received are in the output token total.
func cancelledText(q metrics.Requests) string {
	return fmt.Sprintf("%s cancelled by the client (%s; not failures, outside latency and goodput, tokens kept)",
		fmtInt(int64(q.Cancelled)), fmtPct(frac(q.Cancelled, q.Total)))
}

// cancelledSub is the Requests tile's addition: " · N cancelled", or "" when none was.
func cancelledSub(q metrics.Requests) string {
	if q.Cancelled == 0 {
		return ""
	}
	return " · " + fmtInt(int64(q.Cancelled)) + " cancelled"
}

// writeMarkdownIssue38 writes the Markdown lines of the cancelled requests and of the server's
// speculative acceptance (speculative.go), when the run has them.
func writeMarkdownIssue38(e *errWriter, s *metrics.Summary) {
	if s.Requests.Cancelled > 0 {
		e.printf("- **Cancelled:** %s\n", mdEscape(cancelledText(s.Requests)))
	}
	if s.Speculative != nil {
		e.printf("- **Speculative:** %s\n", mdEscape(speculativeLine(s.Speculative)))
	}
}
