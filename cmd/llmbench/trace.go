package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/traces"
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

// traceIO are the flags every transforming subcommand shares.
type traceIO struct {
	out     string
	lenient bool
}

func (t *traceIO) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&t.out, "out", "o", "-", "output trace (.jsonl, or .msgpack); - for stdout")
	cmd.Flags().BoolVar(&t.lenient, "lenient", false, "ignore unknown fields in the input trace")
}

// transform reads the trace, applies f and writes the result.
func (t *traceIO) transform(app *App, in string, f func([]traces.Request) ([]traces.Request, error)) error {
	reqs, err := traces.ReadFile(in, traces.ReadOptions{Lenient: t.lenient})
	if err != nil {
		return err
	}
	out, err := f(reqs)
	if err != nil {
		return err
	}
	if len(out) == 0 {
		return fmt.Errorf("no requests left in %s after this operation; nothing written", in)
	}
	if err := writeTraceOut(app.Stdout, t.out, out); err != nil {
		return err
	}
	fmt.Fprintf(app.Stderr, "trace: %s to %s\n", traceLine(out), outName(t.out))
	return nil
}

func newTraceStatsCmd(app *App) *cobra.Command {
	var asJSON, lenient bool
	var block int
	cmd := &cobra.Command{
		Use:     "stats TRACE",
		Short:   "Describe a trace: count, duration, rate, burstiness, lengths, prefill:decode, classes, prefix reuse",
		Example: "  llmbench trace stats traces/examples/mixed-small.jsonl\n  llmbench trace stats prod.jsonl --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reqs, err := traces.ReadFile(args[0], traces.ReadOptions{Lenient: lenient})
			if err != nil {
				return err
			}
			st := traces.ComputeStatsBlocks(reqs, block)
			if asJSON {
				return writeJSONTo(app.Stdout, st)
			}
			printStats(app.Stdout, args[0], st)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the stats as JSON (the summary.json \"workload\" block)")
	cmd.Flags().BoolVar(&lenient, "lenient", false, "ignore unknown fields")
	cmd.Flags().IntVar(&block, "block-tokens", traces.DefaultBlockTokens, "prompt tokens per hash_ids block for prefix reuse")
	return cmd
}

func printStats(w io.Writer, name string, st traces.Stats) {
	lengths := func(l traces.LengthStats) string {
		return fmt.Sprintf("mean %.1f  p50 %d  p90 %d  p99 %d  max %d  (min %d)", l.Mean, l.P50, l.P90, l.P99, l.Max, l.Min)
	}
	fmt.Fprintf(w, "trace           %s\n", name)
	fmt.Fprintf(w, "requests        %d over %.2f s (%.3f req/s)\n", st.Count, st.DurationS, st.RatePerS)
	fmt.Fprintf(w, "burstiness      %.3f (CV of inter-arrival gaps: 0 even, 1 Poisson, >1 bursty)\n", st.Burstiness)
	fmt.Fprintf(w, "input tokens    %s\n", lengths(st.InputTokens))
	fmt.Fprintf(w, "output tokens   %s\n", lengths(st.OutputTokens))
	fmt.Fprintf(w, "prefill:decode  %.2f (%d input / %d output tokens)\n", st.PrefillDecodeRatio, st.TotalInputTokens, st.TotalOutputTokens)
	if len(st.Classes) > 0 {
		names := make([]string, 0, len(st.Classes))
		for c := range st.Classes {
			names = append(names, c)
		}
		sort.Slice(names, func(i, j int) bool {
			if st.Classes[names[i]] != st.Classes[names[j]] {
				return st.Classes[names[i]] > st.Classes[names[j]]
			}
			return names[i] < names[j]
		})
		var parts []string
		for _, c := range names {
			parts = append(parts, fmt.Sprintf("%s %d", c, st.Classes[c]))
		}
		fmt.Fprintf(w, "classes         %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "prefix reuse    %.1f%% of input tokens (%d tokens, %d-token blocks)\n", 100*st.PrefixReuse, st.PrefixReuseTokens, st.BlockTokens)
	fmt.Fprintf(w, "sessions        %d", st.Sessions)
	if st.Sessions > 0 {
		fmt.Fprintf(w, " (up to %d turns)", st.MaxTurn)
	}
	fmt.Fprintf(w, "\ntext            %d with prompt, %d with messages, %d token counts only\n", st.WithPrompt, st.Chat, st.Count-st.WithPrompt-st.Chat)
	if st.Images > 0 {
		fmt.Fprintf(w, "images          %d in %d requests\n", st.Images, st.WithImages)
	}
	if a := st.Agentic; a != nil {
		t := a.TurnsPerSession
		fmt.Fprintf(w, "turns/session   min %d  mean %.1f  p50 %d  p90 %d  max %d\n", t.Min, t.Mean, t.P50, t.P90, t.Max)
		f := a.FanOut
		fmt.Fprintf(w, "fan-out         %d turns fan out to 2+ (mean %.2f, max %d waiting on one turn), %d joins\n", a.FanOutTurns, f.Mean, f.Max, a.JoinTurns)
		d := a.ToolDelayMs
		fmt.Fprintf(w, "tool delay      %d turns · mean %.1f  p50 %.1f  p90 %.1f  p99 %.1f  max %.1f ms\n", d.Count, d.Mean, d.P50, d.P90, d.P99, d.Max)
		if a.WithAffinity > 0 {
			fmt.Fprintf(w, "affinity        %d requests carry an explicit key\n", a.WithAffinity)
		}
	}
}

func newTraceScaleCmd(app *App) *cobra.Command {
	var io traceIO
	var factor, rate float64
	cmd := &cobra.Command{
		Use:   "scale TRACE (--factor F | --rate R) [-o OUT]",
		Short: "Stretch or compress a trace's timeline (arrivals and think times)",
		Example: `  llmbench trace scale prod.jsonl --factor 0.5 -o twice-as-fast.jsonl
  llmbench trace scale prod.jsonl --rate 20 -o at-20-rps.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("factor") == cmd.Flags().Changed("rate") {
				return errors.New("give exactly one of --factor (time multiplier) or --rate (target requests/s)")
			}
			return io.transform(app, args[0], func(r []traces.Request) ([]traces.Request, error) {
				if cmd.Flags().Changed("rate") {
					return traces.ScaleToRate(r, rate)
				}
				return traces.Scale(r, factor)
			})
		},
	}
	io.add(cmd)
	cmd.Flags().Float64Var(&factor, "factor", 1, "multiply every offset by this (2 = twice as long, half the rate)")
	cmd.Flags().Float64Var(&rate, "rate", 0, "rescale time so the mean rate becomes this many requests/s")
	return cmd
}

func newTraceSliceCmd(app *App) *cobra.Command {
	var io traceIO
	var from, to time.Duration
	var keep bool
	cmd := &cobra.Command{
		Use:     "slice TRACE --from D [--to D] [-o OUT]",
		Short:   "Keep the requests arriving in a time window [from, to)",
		Example: "  llmbench trace slice prod.jsonl --from 10m --to 20m -o window.jsonl",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return io.transform(app, args[0], func(r []traces.Request) ([]traces.Request, error) {
				return traces.Slice(r, from, to, !keep)
			})
		},
	}
	io.add(cmd)
	cmd.Flags().DurationVar(&from, "from", 0, "window start (offset from the trace start)")
	cmd.Flags().DurationVar(&to, "to", 0, "window end, exclusive (0 = to the end)")
	cmd.Flags().BoolVar(&keep, "keep-offsets", false, "keep the original arrival offsets instead of starting the window at 0")
	return cmd
}

func newTraceSampleCmd(app *App) *cobra.Command {
	var io traceIO
	var o traces.SampleOptions
	cmd := &cobra.Command{
		Use:   "sample TRACE (--n N | --fraction F) [--seed S] [-o OUT]",
		Short: "Keep a random subset of requests (whole sessions stay together), at their original times",
		Example: `  llmbench trace sample prod.jsonl --n 500 --seed 3 -o sample.jsonl
  llmbench trace sample prod.jsonl --fraction 0.1 | llmbench trace scale /dev/stdin --factor 0.1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return io.transform(app, args[0], func(r []traces.Request) ([]traces.Request, error) {
				return traces.Sample(r, o)
			})
		},
	}
	io.add(cmd)
	cmd.Flags().IntVar(&o.N, "n", 0, "number of requests (sessions count as one) to keep")
	cmd.Flags().Float64Var(&o.Fraction, "fraction", 0, "fraction in (0, 1] of requests (or sessions) to keep")
	cmd.Flags().Int64Var(&o.Seed, "seed", 1, "random seed")
	return cmd
}

func newTraceFilterCmd(app *App) *cobra.Command {
	var io traceIO
	var classes []string
	var exclude bool
	cmd := &cobra.Command{
		Use:     "filter TRACE --class C[,C...] [--exclude] [-o OUT]",
		Short:   "Keep (or drop) the requests of some classes",
		Example: "  llmbench trace filter traces/examples/mixed-small.jsonl --class rag,summarization -o prefill-heavy.jsonl",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(classes) == 0 {
				return errors.New("--class is required (comma-separated; an empty name selects untagged requests)")
			}
			return io.transform(app, args[0], func(r []traces.Request) ([]traces.Request, error) {
				return traces.Filter(r, classes, exclude)
			})
		},
	}
	io.add(cmd)
	cmd.Flags().StringSliceVar(&classes, "class", nil, "classes to keep, comma-separated")
	cmd.Flags().BoolVar(&exclude, "exclude", false, "drop the given classes instead of keeping them")
	return cmd
}

func newTraceValidateCmd(app *App) *cobra.Command {
	var lenient bool
	var maxErrs int
	cmd := &cobra.Command{
		Use:     "validate TRACE...",
		Short:   "Check traces against format v1; print ok or every FILE:LINE: FIELD: REASON (exit 1)",
		Example: "  llmbench trace validate traces/examples/*.jsonl",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, path := range args {
				n, probs, err := traces.CheckFile(path, traces.ReadOptions{Lenient: lenient}, maxErrs)
				if err != nil {
					return err
				}
				if len(probs) == 0 && n == 0 {
					fmt.Fprintf(app.Stdout, "%s: no requests (every line is blank or a comment)\n", path)
					bad++
					continue
				}
				for _, p := range probs {
					fmt.Fprintln(app.Stdout, p.Error())
				}
				if len(probs) > 0 {
					bad++
					if maxErrs > 0 && len(probs) == maxErrs {
						fmt.Fprintf(app.Stdout, "%s: stopped after %d problems (--max-errors)\n", path, maxErrs)
					}
					continue
				}
				fmt.Fprintf(app.Stdout, "%s: ok (%d requests)\n", path, n)
				if src, err := traces.OpenFile(path, traces.ReadOptions{Lenient: lenient}); err == nil {
					if span := traceSpan(src); span > defaultMaxSpan {
						fmt.Fprintf(app.Stdout, "%s: warning: a replay would span %v (%.0f s); run, ab and sweep refuse it unless --max-span allows it\n",
							path, span.Round(time.Second), span.Seconds())
					}
				}
			}
			if bad > 0 {
				return &exitError{code: 1, err: fmt.Errorf("%d of %d traces are invalid", bad, len(args))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&lenient, "lenient", false, "ignore unknown fields")
	cmd.Flags().IntVar(&maxErrs, "max-errors", 50, "stop listing a file's problems after this many (0 = all)")
	return cmd
}
