package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/usecase"
)

func init() { register("compare", newCompareCmd) }

type compareOptions struct {
	base, cand []string
	failOn     string
	format     string
	html       string
	resamples  int
	seed       uint64
	confidence float64
	metrics    *metricFlags
	echartsJS  string
	allowTrace bool
}

func newCompareCmd(app *App) *cobra.Command {
	o := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare BASE CAND | compare --base DIR... --cand DIR...",
		Short: "Compare two result sets with paired bootstrap confidence intervals; exit 1 on a regression",
		Long: `Compare base and candidate results directories. Intervals follow the two-level variance
model (docs/comparing.md, "Decisions under noise"): the runs of each side are resampled, then time blocks
of requests matched by id (same trace), so every interval includes run-to-run and within-run
variation; per-run numbers (throughput) need several runs per side, proportions get score
intervals. A metric regresses only when its whole confidence interval lies beyond a --fail-on
limit; labels on the other metrics are Holm-adjusted, and each gated metric states its minimum
detectable effect. Give several directories per side (--base a1,a2,a3 --cand b1,b2,b3) for
decisions that hold up on a rerun. Results of different traces (by the trace fingerprint in summary.json) are refused
unless --allow-different-trace; every configuration difference the run facts show is listed.

Exit status: 0 no regression, 1 regression, 2 usage or data error (including different traces).`,
		Example: `  llmbench compare results/nightly-base results/nightly-cand --fail-on 'ttft.p95>+5%,goodput<-2%'
  llmbench compare --base a1/ a2/ a3/ --cand b1/ b2/ b3/ --format markdown > comment.md`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 2 && len(o.base) == 0 && len(o.cand) == 0:
				o.base, o.cand = args[:1], args[1:]
			case len(args) == 0 && len(o.base) > 0 && len(o.cand) > 0:
			default:
				return &exitError{2, fmt.Errorf("give BASE and CAND directories, or --base DIR... --cand DIR...")}
			}
			return exitStatus(usecase.Compare(app.env(), o.options()))
		},
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&o.base, "base", nil, "base results directories (pooled)")
	fs.StringSliceVar(&o.cand, "cand", nil, "candidate results directories (pooled)")
	fs.StringVar(&o.failOn, "fail-on", "", `regression rules, e.g. 'ttft.p95>+5%,tpot.p50>+3%,goodput<-2%' (see "llmbench compare --list-metrics")`)
	fs.StringVar(&o.format, "format", "text", comparisonFormatHelp)
	fs.StringVar(&o.html, "html", "", "also write the HTML comparison report to this file")
	fs.IntVar(&o.resamples, "resamples", 2000, "bootstrap resamples")
	fs.Uint64Var(&o.seed, "bootstrap-seed", 1, "bootstrap seed (fixed so the gate is reproducible)")
	fs.Float64Var(&o.confidence, "confidence", 0.95, "confidence level of the intervals")
	fs.StringVar(&o.echartsJS, "echarts-js", "", "local echarts.min.js to inline into the HTML report")
	fs.BoolVar(&o.allowTrace, "allow-different-trace", false, "compare results of different traces (refused by default: exit 2)")
	o.metrics = addMetricFlags(fs)
	listMetrics := fs.Bool("list-metrics", false, "list the metric names --fail-on accepts and exit")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if *listMetrics {
			usecase.ListMetrics(app.Stdout)
			return &exitError{0, nil}
		}
		return nil
	}
	return cmd
}

// options copies compare's flags into the use case's options.
func (o *compareOptions) options() *usecase.CompareOptions {
	return &usecase.CompareOptions{Base: o.base, Cand: o.cand, FailOn: o.failOn, Format: o.format, HTML: o.html,
		Resamples: o.resamples, Seed: o.seed, Confidence: o.confidence, Metrics: o.metrics.opts(),
		EChartsJS: o.echartsJS, AllowTrace: o.allowTrace}
}

// comparisonFormatHelp is the --format help of compare and ab.
const comparisonFormatHelp = usecase.ComparisonFormatHelp
