package metrics

import (
	"fmt"
	"sort"
	"strings"
)

// Survivor bias (issue 45). A request given up on while it waited for the server — no
// headers, no first token, a silent stream or no end in time (FailureKind.WaitedOut) — is a
// failure and stays out of the latency distributions, which hold the requests that finished.
// On an overloaded server the requests that waited longest are the ones that timed out, so
// the percentiles over the rest describe survivors. The summary says so in a warning that
// counts them and, where the records are at hand, bounds TTFT from below by counting each of
// them at the TTFT it had (when a token came) or at the time it had waited (when none did).

// survivorPrefix begins the warning (merge recomputes it for the whole).
const survivorPrefix = "survivor bias:"

// addWaited notes r's TTFT lower bound when it was given up on while waiting.
func (g *group) addWaited(r *Record) {
	if !r.Failure.WaitedOut() || r.End <= 0 {
		return
	}
	if g.waited == nil {
		g.waited = newHist()
	}
	if r.FirstToken > 0 {
		g.waited.recordNs(r.FirstToken - r.Intended)
		return
	}
	g.waited.recordNs(r.End - r.Intended)
}

// waitedBound says how far TTFT's P50 and P99 are at least once the requests given up on are
// counted at their lower bound, next to the finished requests' ttft; "" when none was.
func (g *group) waitedBound(ttft Dist) string {
	if g.waited == nil || g.waited.count() == 0 {
		return ""
	}
	all := newHist()
	all.merge(g.h[hTTFT])
	all.merge(g.waited)
	lo := all.dist(scaleMicrosToMs)
	s := fmt.Sprintf("counting each at the TTFT it had or the time it had waited, TTFT P50 is at least %s ms and P99 at least %s ms", fmtMsWarn(lo.P50), fmtMsWarn(lo.P99))
	if ttft.Count > 0 {
		s += fmt.Sprintf(" (over the finished ones: %s and %s ms)", fmtMsWarn(ttft.P50), fmtMsWarn(ttft.P99))
	}
	return s
}

// survivorWarning names the requests given up on while waiting for the server, by kind, and
// what the latency percentiles then describe; bound is waitedBound's sentence, if any.
func survivorWarning(r Requests, bound string) []string {
	n := 0
	var kinds []string
	for k, c := range r.Failures {
		if FailureKind(k).WaitedOut() && c > 0 {
			n += c
			kinds = append(kinds, k)
		}
	}
	if n == 0 {
		return nil
	}
	sort.Slice(kinds, func(i, j int) bool {
		if r.Failures[kinds[i]] != r.Failures[kinds[j]] {
			return r.Failures[kinds[i]] > r.Failures[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, r.Failures[k])
	}
	sent := r.Total - r.Dropped - r.Cancelled
	w := fmt.Sprintf("%s %d of %d sent requests were given up on while waiting for the server (%s) and are not in the latency percentiles, which describe the %d that finished",
		survivorPrefix, n, sent, strings.Join(parts, ", "), r.Succeeded)
	if bound != "" {
		w += "; " + bound
	}
	return []string{w + ": the server was past its capacity, so its latency is worse than the percentiles show — lower the rate, or raise the timeouts to measure the whole wait"}
}

// fmtMsWarn formats milliseconds for a warning: whole numbers with thousands separators from
// 100 ms up, three significant digits below.
func fmtMsWarn(v float64) string {
	if v < 100 {
		return fmt.Sprintf("%.3g", v)
	}
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
