package metrics

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Distribution families that Compare can take a statistic of, with their unit.
var distFamilies = map[string]string{
	"ttft":             "ms",
	"tpot":             "ms",
	"itl":              "ms",
	"itl_chunk":        "ms",
	"e2e":              "ms",
	"queue":            "ms",
	"max_gap":          "ms",
	"normalized":       "ms",
	"tokens_per_chunk": "tokens",
	"fluidity":         "index",
}

// Statistics of a distribution family: "mean", "p50", "p90", "p95", "p99", "p999", "max".
var distStats = []string{"mean", "p50", "p90", "p95", "p99", "p999", "max"}

// scalarMetrics are the non-distribution metrics: unit and which direction is better.
var scalarMetrics = map[string]struct{ unit, better string }{
	"throughput.requests_per_s":      {"req/s", "higher"},
	"throughput.input_tokens_per_s":  {"tok/s", "higher"},
	"throughput.output_tokens_per_s": {"tok/s", "higher"},
	"goodput.fraction":               {"fraction", "higher"},
	"goodput.requests_per_s":         {"req/s", "higher"},
	"stalls.requests_fraction":       {"fraction", "lower"},
	"stalls.per_request":             {"stalls", "lower"},
	"stalls.time_fraction":           {"fraction", "lower"},
	"fluidity.fraction_ge_0_9":       {"fraction", "higher"},
	"failures.fraction":              {"fraction", "lower"},
}

// metricAliases are short names accepted by ParseFailOn and CompareOptions.Metrics.
var metricAliases = map[string]string{
	"goodput":    "goodput.fraction",
	"throughput": "throughput.output_tokens_per_s",
	"fluidity":   "fluidity.mean",
	"stalls":     "stalls.requests_fraction",
	"failures":   "failures.fraction",
}

// DefaultFailOn is a regression gate a CLI can apply when the user gives no --fail-on: a
// latency percentile 5% (10% for per-token ITL P99) slower, throughput 5% lower or the goodput
// fraction 2% lower, each only when the whole confidence interval is past the limit.
const DefaultFailOn = "ttft.p95>+5%,tpot.p95>+5%,itl.p99>+10%,e2e.p95>+5%,throughput<-5%,goodput<-2%"

// MetricInfo describes a comparable metric.
type MetricInfo struct {
	Name   string // canonical name
	Unit   string
	Better string // "lower" or "higher"
}

// LookupMetric resolves a metric name or alias ("ttft.p95", "goodput", "itl_chunk.p50") to its
// canonical form. The error lists the valid names.
func LookupMetric(name string) (MetricInfo, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := metricAliases[n]; ok {
		n = a
	}
	if s, ok := scalarMetrics[n]; ok {
		return MetricInfo{Name: n, Unit: s.unit, Better: s.better}, nil
	}
	fam, stat, ok := strings.Cut(n, ".")
	if unit, known := distFamilies[fam]; known {
		if !ok {
			return MetricInfo{}, fmt.Errorf("metric %q: name a statistic, e.g. %s.p95 (one of %s)", name, fam, strings.Join(distStats, ", "))
		}
		for _, s := range distStats {
			if s == stat {
				better := "lower"
				if fam == "fluidity" {
					better = "higher"
				}
				if fam == "tokens_per_chunk" {
					better = "higher"
				}
				return MetricInfo{Name: n, Unit: unit, Better: better}, nil
			}
		}
		return MetricInfo{}, fmt.Errorf("metric %q: unknown statistic %q; use one of %s", name, stat, strings.Join(distStats, ", "))
	}
	return MetricInfo{}, fmt.Errorf("unknown metric %q; valid: %s", name, strings.Join(MetricNames(), ", "))
}

// MetricNames lists the families with a placeholder statistic and every scalar metric, for
// help texts and errors.
func MetricNames() []string {
	var out []string
	for f := range distFamilies {
		out = append(out, f+".{mean,p50,p90,p95,p99,p999,max}")
	}
	for s := range scalarMetrics {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// ParseFailOn parses a comma-separated list of regression rules, such as
// "ttft.p95>+5%,goodput<-2%,itl.p99>+10ms". Each rule is METRIC OP VALUE where OP is ">" (fail
// when the metric grows past VALUE) or "<" (fail when it falls below VALUE), and VALUE is a
// signed percent of the base ("+5%"), a duration for ms metrics ("+20ms", "0.5s"), or a plain
// number in the metric's unit ("-0.02" for a fraction). ">=" and "<=" are accepted and mean the
// same as ">" and "<" (the comparison is on a confidence interval, so the boundary is moot).
// An empty string gives no rules.
func ParseFailOn(s string) ([]Threshold, error) {
	var out []Threshold
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for i, raw := range strings.Split(s, ",") {
		rule := strings.TrimSpace(raw)
		if rule == "" {
			return nil, fmt.Errorf("--fail-on rule %d is empty (stray comma in %q)", i+1, s)
		}
		t, err := parseRule(rule)
		if err != nil {
			return nil, fmt.Errorf("--fail-on rule %d %q: %w", i+1, rule, err)
		}
		out = append(out, t)
	}
	return out, nil
}

func parseRule(rule string) (Threshold, error) {
	idx := strings.IndexAny(rule, "<>")
	if idx < 0 {
		return Threshold{}, fmt.Errorf("missing operator: write METRIC>VALUE or METRIC<VALUE, e.g. ttft.p95>+5%%")
	}
	name := strings.TrimSpace(rule[:idx])
	op := string(rule[idx])
	rest := rule[idx+1:]
	if strings.HasPrefix(rest, "=") {
		rest = rest[1:]
	}
	rest = strings.TrimSpace(rest)
	if name == "" {
		return Threshold{}, fmt.Errorf("missing metric name before %q", op)
	}
	info, err := LookupMetric(name)
	if err != nil {
		return Threshold{}, err
	}
	if rest == "" {
		return Threshold{}, fmt.Errorf("missing value after %q, e.g. %s%s+5%%", op, name, op)
	}
	t := Threshold{Metric: info.Name, Op: op, Text: rule}
	switch {
	case strings.HasSuffix(rest, "%"):
		v, err := strconv.ParseFloat(strings.TrimSpace(rest[:len(rest)-1]), 64)
		if err != nil || !isFinite(v) {
			return Threshold{}, fmt.Errorf("bad percent %q: write a signed number and %%, e.g. +5%%", rest)
		}
		t.Value, t.Relative = v, true
	default:
		if v, err := strconv.ParseFloat(rest, 64); err == nil {
			if !isFinite(v) {
				return Threshold{}, fmt.Errorf("value %q is not a finite number", rest)
			}
			t.Value = v
			break
		}
		unsigned, neg := rest, false
		if unsigned[0] == '+' || unsigned[0] == '-' {
			neg = unsigned[0] == '-'
			unsigned = unsigned[1:]
		}
		d, err := time.ParseDuration(unsigned)
		if err != nil {
			return Threshold{}, fmt.Errorf("bad value %q: use a percent (+5%%), a duration (+20ms) or a number", rest)
		}
		if info.Unit != "ms" {
			return Threshold{}, fmt.Errorf("value %q is a duration but %s is measured in %s; use a percent or a number", rest, info.Name, info.Unit)
		}
		t.Value = float64(d) / float64(time.Millisecond)
		if neg {
			t.Value = -t.Value
		}
	}
	return t, nil
}

// String renders the rule in canonical form.
func (t Threshold) String() string {
	v := strconv.FormatFloat(t.Value, 'g', -1, 64)
	if t.Value >= 0 {
		v = "+" + v
	}
	if t.Relative {
		v += "%"
	}
	return t.Metric + t.Op + v
}
