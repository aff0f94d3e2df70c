package usecase

import (
	"fmt"
	"io"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
)

// CompareOptions are `llmbench compare`'s options: base and candidate results directories
// (each side pooled), the --fail-on rules, the bootstrap and the output.
type CompareOptions struct {
	Base, Cand []string
	FailOn     string
	Format     string
	// HTML is the file the HTML comparison goes to ("" for none).
	HTML       string
	Resamples  int
	Seed       uint64
	Confidence float64
	Metrics    MetricOptions
	EChartsJS  string
	// AllowTrace compares results of different traces (unpaired).
	AllowTrace bool
}

// Compare compares the candidate results with the base and prints the comparison: exit 1
// when a --fail-on rule is broken, 2 (with the error) on bad input.
func Compare(env *Env, o *CompareOptions) (int, error) {
	if err := CheckComparisonFormat(o.Format); err != nil {
		return ExitBadInput, err
	}
	if o.EChartsJS != "" && o.HTML == "" {
		return ExitBadInput, fmt.Errorf("--echarts-js is inlined into the HTML report; it does nothing without --html FILE")
	}
	copts, err := o.options()
	if err != nil {
		return ExitBadInput, err
	}
	base, err := runner.RecordSources(o.Base)
	if err != nil {
		return ExitBadInput, err
	}
	cand, err := runner.RecordSources(o.Cand)
	if err != nil {
		return ExitBadInput, err
	}
	traceWarnings, err := runner.CheckSameTrace(o.Base, o.Cand)
	copts.Unpaired = err != nil
	if copts.Unpaired {
		if !o.AllowTrace {
			return ExitBadInput, err
		}
		traceWarnings = append(traceWarnings, "--allow-different-trace: compared unpaired, because "+err.Error())
	}
	copts.DesignedHitRate = [2]*float64{runner.DesignedHitRate(o.Base), runner.DesignedHitRate(o.Cand)} // the cache confound (issue 45)
	c, err := metrics.Compare(base, cand, copts)
	if err != nil {
		return ExitBadInput, err
	}
	runner.AttachRunFacts(c, o.Base, o.Cand)
	c.Warnings = append(c.Warnings, traceWarnings...)
	if err := WriteComparison(env, c, o.Format, o.HTML, o.EChartsJS, runner.PairRecords(o.Base[0], o.Cand[0])); err != nil {
		return ExitBadInput, err
	}
	if c.Regressed {
		return ExitRegression, nil
	}
	return ExitOK, nil
}

// options builds metrics' comparison options (Unpaired is decided from the traces).
func (o *CompareOptions) options() (metrics.CompareOptions, error) {
	thresholds, err := metrics.ParseFailOn(o.FailOn)
	if err != nil {
		return metrics.CompareOptions{}, err // ParseFailOn names the flag and the rule
	}
	mopts, err := o.Metrics.Options()
	if err != nil {
		return metrics.CompareOptions{}, err
	}
	return metrics.CompareOptions{
		Summary: mopts, Thresholds: thresholds, Resamples: o.Resamples, Seed: o.Seed, Confidence: o.Confidence,
		BaseLabel: label(o.Base), CandLabel: label(o.Cand),
	}, nil
}

// label names one side: its directory, or the first with how many more were pooled.
func label(dirs []string) string {
	if len(dirs) == 1 {
		return dirs[0]
	}
	return fmt.Sprintf("%s (+%d more)", dirs[0], len(dirs)-1)
}

// ListMetrics writes the metric names --fail-on accepts, one a line.
func ListMetrics(w io.Writer) {
	for _, n := range metrics.MetricNames() {
		fmt.Fprintln(w, n)
	}
}
