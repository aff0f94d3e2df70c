package runner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// DefaultMaxFailureRate is the failure fraction above which a run counts as failed by
// default: 1, so only a run in which no request succeeded fails.
const DefaultMaxFailureRate = 1.0

// RunFailure says why a finished run counts as failed ("" when it does not): no request
// succeeded, or more than maxFailureRate of them failed (maxFailureRate >= 1: only the first),
// or the server counted the synthesized prompts beyond the input tolerance
// (metrics.InputFailure).
// The reason names the commonest failure kinds.
func RunFailure(s *metrics.Summary, maxFailureRate float64) string {
	if s == nil || s.Requests.Total == 0 {
		return ""
	}
	r := s.Requests
	if v := s.Saturation; v != nil && v.Stopped {
		// Issue 39: the requests a stop at saturation cancelled (metrics.KindCancelled, counted
		// in Cancelled, never in Failed) are not the server's: judge the others.
		r.Total -= r.Cancelled
		if r.Total <= 0 {
			return ""
		}
	}
	frac := float64(r.Failed) / float64(r.Total)
	switch {
	case r.Succeeded == 0 && r.Failed == 0 && r.Cancelled > 0: // cancellations (issue 38)
		return fmt.Sprintf("no request succeeded: %d of %d were cancelled by the client before they ended (cancel_after_ms); nothing was measured", r.Cancelled, r.Total)
	case r.Succeeded == 0:
		return fmt.Sprintf("no request succeeded (%d of %d failed%s)", r.Failed, r.Total, kinds(r.Failures))
	case maxFailureRate < 1 && frac > maxFailureRate:
		return fmt.Sprintf("%.1f%% of requests failed (%d of %d%s), more than --max-failure-rate %g", frac*100, r.Failed, r.Total, kinds(r.Failures), maxFailureRate)
	}
	// Prompts the server counted at other lengths than the trace asked for measured another
	// workload (docs/inputs.md).
	return metrics.InputFailure(s)
}

func kinds(m map[string]int) string {
	type kc struct {
		k string
		n int
	}
	var list []kc
	for k, n := range m {
		if n > 0 {
			list = append(list, kc{k, n})
		}
	}
	if len(list) == 0 {
		return ""
	}
	sort.Slice(list, func(i, j int) bool { return list[i].n > list[j].n || (list[i].n == list[j].n && list[i].k < list[j].k) })
	var parts []string
	for i, e := range list {
		if i == 3 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", e.k, e.n))
	}
	return ": " + strings.Join(parts, ", ")
}
