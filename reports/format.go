package reports

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// na is printed where a number does not exist (no samples, NaN, infinity).
const na = "n/a"

// fmtMs formats a latency in milliseconds with precision that suits its size.
func fmtMs(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return na
	}
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a < 1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	case a < 100:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a < 1000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a < 1e6:
		return groupDigits(strconv.FormatFloat(v, 'f', 0, 64))
	default:
		// Over 16 minutes (a saturated run): three significant digits keep the value inside
		// its table column ("1.11e+06").
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// fmtDistMs formats one statistic of d, or n/a when d holds no samples.
func fmtDistMs(d metrics.Dist, v float64) string {
	if d.Count == 0 {
		return na
	}
	return fmtMs(v)
}

// fmtFixed formats v with dec decimals and thousands separators.
func fmtFixed(v float64, dec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return na
	}
	return groupDigits(strconv.FormatFloat(v, 'f', dec, 64))
}

// fmtShort formats v with at most three decimals and no trailing zeros (limits, thresholds).
func fmtShort(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return na
	}
	s := strconv.FormatFloat(v, 'f', 3, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return groupDigits(s)
}

// fmtRate formats a per-second rate.
func fmtRate(v float64) string {
	if math.Abs(v) >= 100 {
		return fmtFixed(v, 0)
	}
	if math.Abs(v) >= 10 {
		return fmtFixed(v, 1)
	}
	return fmtFixed(v, 2)
}

// fmtPct formats a fraction (0..1) as a percentage.
func fmtPct(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return na
	}
	return strconv.FormatFloat(f*100, 'f', 1, 64) + "%"
}

// fmtSignedPct formats a relative change (0.05 = +5.0%) with its sign.
func fmtSignedPct(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return na
	}
	s := strconv.FormatFloat(f*100, 'f', 1, 64) + "%"
	if f >= 0 {
		s = "+" + s
	}
	return s
}

// fmtInt formats a count with thousands separators.
func fmtInt(n int64) string { return groupDigits(strconv.FormatInt(n, 10)) }

// fmtSeconds formats a duration in seconds.
func fmtSeconds(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return na
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " s"
}

// fmtMoney formats an amount of currency.
func fmtMoney(v float64, currency string) string {
	dec := 2
	if a := math.Abs(v); a > 0 && a < 1 {
		// Three significant digits for small amounts (per-request costs are tiny).
		dec = 2 - int(math.Floor(math.Log10(a)))
	}
	s := fmtFixed(v, dec)
	if currency != "" {
		s += " " + currency
	}
	return s
}

// groupDigits inserts thousands separators into the integer part of a formatted number.
func groupDigits(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		sign, s = s[:1], s[1:]
	}
	intPart, frac := s, ""
	if i := strings.IndexByte(s, '.'); i >= 0 {
		intPart, frac = s[:i], s[i:]
	}
	if len(intPart) <= 3 {
		return sign + s
	}
	var b strings.Builder
	pre := len(intPart) % 3
	if pre > 0 {
		b.WriteString(intPart[:pre])
	}
	for i := pre; i < len(intPart); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(intPart[i : i+3])
	}
	return sign + b.String() + frac
}

// sortedKeys returns the keys of m in ascending order, so every rendering is deterministic.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// countsByValue orders a count map by count (descending), then name.
func countsByValue(m map[string]int) []string {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	return keys
}

// modeLabel names how load was applied; closed-loop runs are labelled as such everywhere.
func modeLabel(r metrics.RunInfo) string {
	switch {
	case r.Mode == "closed-loop" && r.Concurrency > 0:
		return fmt.Sprintf("closed-loop (concurrency %d)", r.Concurrency)
	case r.Mode == "open-loop" && r.MaxConcurrency > 0:
		return fmt.Sprintf("open-loop (max concurrency %d)", r.MaxConcurrency)
	case r.Mode == "":
		return "mode unknown"
	}
	return r.Mode
}

// distRow is one latency distribution shown in a percentile table.
type distRow struct {
	Key   string // stable key, used in data-k attributes and CSV-like outputs
	Label string
	Note  string
	D     metrics.Dist
}

// latencyRows lists the latency distributions of l in report order: the registry's families
// that Latency holds, labelled and described by the registry.
func latencyRows(l metrics.Latency) []distRow {
	var rows []distRow
	for _, f := range metrics.Families() {
		if d, ok := metrics.LatencyDist(l, f.Name); ok {
			rows = append(rows, distRow{Key: f.Name, Label: f.Short, Note: f.What, D: d})
		}
	}
	return rows
}

// distStat is one column of a percentile table.
type distStat struct {
	Key, Label string
	Get        func(metrics.Dist) float64
}

var distStats = []distStat{
	{"mean", "mean", func(d metrics.Dist) float64 { return d.Mean }},
	{"p50", "p50", func(d metrics.Dist) float64 { return d.P50 }},
	{"p90", "p90", func(d metrics.Dist) float64 { return d.P90 }},
	{"p95", "p95", func(d metrics.Dist) float64 { return d.P95 }},
	{"p99", "p99", func(d metrics.Dist) float64 { return d.P99 }},
	{"p999", "p99.9", func(d metrics.Dist) float64 { return d.P999 }},
	{"max", "max", func(d metrics.Dist) float64 { return d.Max }},
}
