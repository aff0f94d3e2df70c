package metrics

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// DefaultFailOn is a regression gate a CLI can apply when the user gives no --fail-on: a
// latency percentile 5% (10% for the largest gap per request) slower, throughput 5% lower or
// the goodput fraction 2% lower, each only when the whole confidence interval is past the
// limit. (Per-token ITL percentiles are descriptive and cannot be gated: max_gap.p99 is the
// stall-sensitive latency the gate watches.)
const DefaultFailOn = "ttft.p95>+5%,tpot.p95>+5%,max_gap.p99>+10%,e2e.p95>+5%,throughput<-5%,goodput<-2%"

// ParseFailOn parses a comma-separated list of regression rules, such as
// "ttft.p95>+5%,goodput<-2pp,max_gap.p99>+10ms". Each rule is METRIC OP VALUE:
//
//   - OP is the direction in which the metric gets worse: ">" (fail when it grows past VALUE)
//     for a metric that is better when lower, "<" (fail when it falls below VALUE) for one that
//     is better when higher. The other direction can never be a regression and is an error
//     that names the rule to write; so is a rule on a descriptive metric (see the registry).
//     ">=" and "<=" mean the same as ">" and "<" (the comparison is on a confidence interval,
//     so the boundary is moot).
//   - VALUE is a signed percent of the base ("+5%"); percentage points for a fraction
//     ("-2pp" is -0.02); a duration for an ms metric ("+20ms", "0.5s"); or a bare number,
//     read in the metric's unit (ms, req/s, tok/s, a fraction in [0, 1], ...). The parsed
//     Threshold records that unit in Unit and says it in Describe.
//
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
	t := Threshold{Metric: info.Name, Op: op, Text: rule, Unit: info.Unit}
	if err := checkRuleDirection(info, op, name, rest); err != nil {
		return Threshold{}, err
	}
	switch {
	case strings.HasSuffix(rest, "%"):
		v, err := strconv.ParseFloat(strings.TrimSpace(rest[:len(rest)-1]), 64)
		if err != nil || !isFinite(v) {
			return Threshold{}, fmt.Errorf("bad percent %q: write a signed number and %%, e.g. +5%%", rest)
		}
		t.Value, t.Relative, t.Unit = v, true, "%"
	case strings.HasSuffix(rest, "pp"):
		v, err := strconv.ParseFloat(strings.TrimSpace(rest[:len(rest)-2]), 64)
		if err != nil || !isFinite(v) {
			return Threshold{}, fmt.Errorf("bad percentage points %q: write a signed number and pp, e.g. -2pp", rest)
		}
		if info.Unit != "fraction" {
			return Threshold{}, fmt.Errorf("value %q is in percentage points, which apply to fractions, but %s is measured in %s; use a percent (+5%%) or a number in %s", rest, info.Name, info.Unit, info.Unit)
		}
		if math.Abs(v) > 100 {
			return Threshold{}, fmt.Errorf("value %q: a fraction changes by at most 100 percentage points", rest)
		}
		t.Value = v / 100
	default:
		if v, err := strconv.ParseFloat(rest, 64); err == nil {
			if !isFinite(v) {
				return Threshold{}, fmt.Errorf("value %q is not a finite number", rest)
			}
			if info.Unit == "fraction" && math.Abs(v) > 1 {
				return Threshold{}, fmt.Errorf("value %q is a bare number, read as a fraction (%s %s), which changes by at most 1; write %s%% for a relative change or %spp for percentage points", rest, info.Name, info.Unit, rest, rest)
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
			return Threshold{}, fmt.Errorf("bad value %q: use a percent (+5%%), a duration (+20ms), percentage points for a fraction (-2pp) or a bare number in %s", rest, info.Unit)
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

// checkRuleDirection rejects a rule that can never be a regression: one on a descriptive
// metric, or one whose operator points the way the metric gets better. The error names the
// rule to write instead.
func checkRuleDirection(info MetricInfo, op, name, value string) error {
	magnitude := strings.TrimLeft(value, "+-")
	switch info.Better {
	case BetterNone:
		return fmt.Errorf("%s is descriptive (%s): it is never better or worse, so no rule can gate it; gate a latency such as max_gap.p99, itl_chunk.p99 or tpot.p95 instead", info.Name, info.What)
	case BetterLower:
		if op == "<" {
			return fmt.Errorf("%s is better when lower, so only a rise can regress it: write %s>+%s (fail when it grows by more than %s)", info.Name, name, magnitude, magnitude)
		}
	case BetterHigher:
		if op == ">" {
			return fmt.Errorf("%s is better when higher, so only a fall can regress it: write %s<-%s (fail when it falls by more than %s)", info.Name, name, magnitude, magnitude)
		}
	}
	return nil
}

// Describe says in words when the rule fails, with the unit its value was read in.
func (t Threshold) Describe() string {
	dir := "rises by more than"
	if t.Op == "<" {
		dir = "falls by more than"
	}
	v := math.Abs(t.Value)
	if (t.Op == ">") != (t.Value >= 0) {
		// "ttft.p95>-5%": fail unless it improved by at least 5%.
		dir = "does not fall by at least"
		if t.Op == "<" {
			dir = "does not rise by at least"
		}
	}
	var amount string
	switch {
	case t.Relative:
		amount = strconv.FormatFloat(v, 'g', -1, 64) + "% of the base"
	case t.Unit == "fraction":
		amount = strconv.FormatFloat(v*100, 'g', 6, 64) + " percentage points (a fraction, " + strconv.FormatFloat(v, 'g', -1, 64) + ")"
	case t.Unit != "":
		amount = strconv.FormatFloat(v, 'g', -1, 64) + " " + t.Unit
	default:
		amount = strconv.FormatFloat(v, 'g', -1, 64) + " in the metric's unit"
	}
	return "fails when " + t.Metric + " " + dir + " " + amount + ", with confidence"
}

// String renders the rule in canonical form.
func (t Threshold) String() string {
	v := strconv.FormatFloat(t.Value, 'g', -1, 64)
	if !strings.HasPrefix(v, "-") { // a signed value; -0 (from "<-0") keeps its own sign
		v = "+" + v
	}
	if t.Relative {
		v += "%"
	}
	return t.Metric + t.Op + v
}
