package main

import (
	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/usecase"
)

func init() { register("trace", newTraceCmd) }

func newTraceCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Inspect and transform traces: stats, scale, slice, sample, filter, validate",
		Long: `Tools for llmbench traces (JSONL v1, or msgpack by the .msgpack extension; see
traces/FORMAT.md). Transforming commands write the new trace to -o (default stdout).`,
	}
	cmd.AddCommand(newTraceStatsCmd(app), newTraceScaleCmd(app), newTraceSliceCmd(app),
		newTraceSampleCmd(app), newTraceFilterCmd(app), newTraceValidateCmd(app), newTraceFetchCmd(app))
	return cmd
}

// addTraceIOFlags adds the flags every transforming subcommand shares.
func addTraceIOFlags(cmd *cobra.Command, t *usecase.TraceIO) {
	cmd.Flags().StringVarP(&t.Out, "out", "o", "-", "output trace (.jsonl, or .msgpack); - for stdout")
	cmd.Flags().BoolVar(&t.Lenient, "lenient", false, "ignore unknown fields in the input trace")
}

func newTraceStatsCmd(app *App) *cobra.Command {
	o := &usecase.TraceStatsOptions{}
	cmd := &cobra.Command{
		Use:     "stats TRACE",
		Short:   "Describe a trace: count, duration, rate, burstiness, lengths, prefill:decode, classes, prefix reuse",
		Example: "  llmbench trace stats traces/examples/mixed-small.jsonl\n  llmbench trace stats prod.jsonl --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path = args[0]
			return usecase.TraceStats(app.env(), o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the stats as JSON (the summary.json \"workload\" block)")
	cmd.Flags().BoolVar(&o.Lenient, "lenient", false, "ignore unknown fields")
	cmd.Flags().IntVar(&o.BlockTokens, "block-tokens", usecase.DefaultBlockTokens, "prompt tokens per hash_ids block for prefix reuse")
	return cmd
}

func newTraceScaleCmd(app *App) *cobra.Command {
	o := &usecase.TraceScaleOptions{}
	cmd := &cobra.Command{
		Use:   "scale TRACE (--factor F | --rate R) [-o OUT]",
		Short: "Stretch or compress a trace's timeline (arrivals and think times)",
		Example: `  llmbench trace scale prod.jsonl --factor 0.5 -o twice-as-fast.jsonl
  llmbench trace scale prod.jsonl --rate 20 -o at-20-rps.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.In, o.Changed = args[0], cmd.Flags().Changed
			return usecase.TraceScale(app.env(), o)
		},
	}
	addTraceIOFlags(cmd, &o.TraceIO)
	cmd.Flags().Float64Var(&o.Factor, "factor", 1, "multiply every offset by this (2 = twice as long, half the rate)")
	cmd.Flags().Float64Var(&o.Rate, "rate", 0, "rescale time so the mean rate becomes this many requests/s")
	return cmd
}

func newTraceSliceCmd(app *App) *cobra.Command {
	o := &usecase.TraceSliceOptions{}
	cmd := &cobra.Command{
		Use:     "slice TRACE --from D [--to D] [-o OUT]",
		Short:   "Keep the requests arriving in a time window [from, to)",
		Example: "  llmbench trace slice prod.jsonl --from 10m --to 20m -o window.jsonl",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.In = args[0]
			return usecase.TraceSlice(app.env(), o)
		},
	}
	addTraceIOFlags(cmd, &o.TraceIO)
	cmd.Flags().DurationVar(&o.From, "from", 0, "window start (offset from the trace start)")
	cmd.Flags().DurationVar(&o.To, "to", 0, "window end, exclusive (0 = to the end)")
	cmd.Flags().BoolVar(&o.KeepOffsets, "keep-offsets", false, "keep the original arrival offsets instead of starting the window at 0")
	return cmd
}

func newTraceSampleCmd(app *App) *cobra.Command {
	o := &usecase.TraceSampleOptions{}
	cmd := &cobra.Command{
		Use:   "sample TRACE (--n N | --fraction F) [--seed S] [-o OUT]",
		Short: "Keep a random subset of requests (whole sessions stay together), at their original times",
		Example: `  llmbench trace sample prod.jsonl --n 500 --seed 3 -o sample.jsonl
  llmbench trace sample prod.jsonl --fraction 0.1 | llmbench trace scale /dev/stdin --factor 0.1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.In = args[0]
			return usecase.TraceSample(app.env(), o)
		},
	}
	addTraceIOFlags(cmd, &o.TraceIO)
	cmd.Flags().IntVar(&o.N, "n", 0, "number of requests (sessions count as one) to keep")
	cmd.Flags().Float64Var(&o.Fraction, "fraction", 0, "fraction in (0, 1] of requests (or sessions) to keep")
	cmd.Flags().Int64Var(&o.Seed, "seed", 1, "random seed")
	return cmd
}

func newTraceFilterCmd(app *App) *cobra.Command {
	o := &usecase.TraceFilterOptions{}
	cmd := &cobra.Command{
		Use:     "filter TRACE --class C[,C...] [--exclude] [-o OUT]",
		Short:   "Keep (or drop) the requests of some classes",
		Example: "  llmbench trace filter traces/examples/mixed-small.jsonl --class rag,summarization -o prefill-heavy.jsonl",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.In = args[0]
			return usecase.TraceFilter(app.env(), o)
		},
	}
	addTraceIOFlags(cmd, &o.TraceIO)
	cmd.Flags().StringSliceVar(&o.Classes, "class", nil, "classes to keep, comma-separated")
	cmd.Flags().BoolVar(&o.Exclude, "exclude", false, "drop the given classes instead of keeping them")
	return cmd
}

func newTraceValidateCmd(app *App) *cobra.Command {
	o := &usecase.TraceValidateOptions{}
	cmd := &cobra.Command{
		Use:     "validate TRACE...",
		Short:   "Check traces against format v1; print ok or every FILE:LINE: FIELD: REASON (exit 1)",
		Example: "  llmbench trace validate traces/examples/*.jsonl",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			return exitStatus(usecase.TraceValidate(app.env(), o))
		},
	}
	cmd.Flags().BoolVar(&o.Lenient, "lenient", false, "ignore unknown fields")
	cmd.Flags().IntVar(&o.MaxErrors, "max-errors", 50, "stop listing a file's problems after this many (0 = all)")
	return cmd
}
