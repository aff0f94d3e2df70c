package reports

import (
	"fmt"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// Headline is the one-line verdict a report opens with, e.g.
// "goodput 94.0% of 12.0 req/s within SLO (11.3 req/s); client healthy".
func Headline(s *metrics.Summary) string {
	if s == nil {
		return "no summary"
	}
	var parts []string
	switch {
	case s.Requests.Total == 0:
		parts = append(parts, "no requests were measured")
	case len(s.Goodput.SLO) > 0 || len(s.Goodput.ClassSLO) > 0:
		parts = append(parts, fmt.Sprintf("goodput %s of %s req/s within SLO (%s req/s)",
			fmtPct(s.Goodput.Fraction), fmtRate(s.Throughput.RequestsPerS), fmtRate(s.Goodput.RequestsPerS)))
	default:
		parts = append(parts, fmt.Sprintf("%s req/s, no SLO given", fmtRate(s.Throughput.RequestsPerS)))
	}
	if s.Requests.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%s failed (%s)", fmtInt(int64(s.Requests.Failed)),
			fmtPct(frac(s.Requests.Failed, s.Requests.Total))))
	}
	parts = append(parts, clientHealth(s.Client))
	if s.Run.Mode == "closed-loop" {
		parts = append(parts, modeLabel(s.Run))
	}
	if s.Run.Interrupted {
		parts = append(parts, "run interrupted")
	}
	return strings.Join(parts, "; ")
}

// healthy reports whether the headline should read as good news: no failures, the client
// was not the bottleneck and the run completed.
func healthy(s *metrics.Summary) bool {
	return s.Requests.Total > 0 && s.Requests.Failed == 0 && !s.Client.Limited && !s.Run.Interrupted
}

func clientHealth(c metrics.Client) string {
	if !c.Limited {
		return "client healthy"
	}
	if strings.HasPrefix(c.Reason, "client-limited") {
		return c.Reason
	}
	if c.Reason != "" {
		return "client-limited: " + c.Reason
	}
	return "client-limited"
}

func frac(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total)
}
