package reports

import (
	"fmt"
	"strings"

	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/metrics"
)

// inputsLine is the terminal's Inputs line: the prompt tokens the trace asked for against
// those the server counted (metrics.InputCheck), and how the prompts were sized.
func inputsLine(c *metrics.InputCheck, sizing string) string {
	var b strings.Builder
	if c.Requests > 0 {
		fmt.Fprintf(&b, "intended %s · server counted %s (%+.1f%%, tolerance ±%s) over %s requests",
			fmtInt(c.Intended), fmtInt(c.Counted), 100*c.Difference, fmtFixed(100*c.Tolerance, 1)+"%", fmtInt(int64(c.Requests)))
		if c.Outside > 0 {
			fmt.Fprintf(&b, " · %s outside (max %+.1f%%)", fmtInt(int64(c.Outside)), 100*c.MaxDifference)
		}
	} else {
		b.WriteString("no server count of the synthesized prompts")
	}
	if c.Uncounted > 0 && c.Requests > 0 {
		fmt.Fprintf(&b, " · %s unverified (no usage)", fmtInt(int64(c.Uncounted)))
	}
	if c.Exceeded {
		b.WriteString(" · EXCEEDED")
	}
	if m, _, ok := strings.Cut(sizing, ":"); ok && m != "" {
		b.WriteString(" · sized by " + safetext.Escape(m, 40)) // the text may quote a server
	}
	return b.String()
}
