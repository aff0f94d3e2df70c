package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/usecase"
)

func init() { register("merge", newMergeCmd) }

type mergeOptions struct {
	out       string
	trace     string
	lenient   bool
	echartsJS string
	dirs      []string
	args      []string
}

func newMergeCmd(app *App) *cobra.Command {
	o := &mergeOptions{}
	cmd := &cobra.Command{
		Use:   "merge -o OUT SHARD_DIR...",
		Short: "Merge the results directories of the shards of one run (run --shard I/N) into one",
		Long: `Merge combines the results of the shards of one sharded run into one results directory:
every record, its times rebased onto the common epoch (--start-at, corrected by each shard's
measured clock offset), the summary computed over all of them (percentiles exactly those of one
histogram of every record) and the report. summary.json's run.merged says how many shards were
merged, the worst clock offset and its bound.

A shard that is missing, or that did not finish (killed or interrupted), is named, and its
requests without a record are counted as dropped (the trace, recorded by the shards or given
with --trace, says which they are). Exits 2, writing nothing, when the directories are not
parts of one run: different traces or settings, or one shard index twice.`,
		Example: `  llmbench merge -o results/merged results/shard-0 results/shard-1 results/shard-2
  llmbench merge -o merged /results/shard-*`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dirs, o.args = args, app.Args
			return runMerge(app, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.out, "out", "o", "", "merged results directory (default results/<timestamp>-merged)")
	fs.StringVar(&o.trace, "trace", "", "the trace the shards replayed (default: the path they recorded); read only to count a missing or partial shard's requests")
	fs.BoolVar(&o.lenient, "lenient", false, "accept unknown fields in trace lines")
	fs.StringVar(&o.echartsJS, "echarts-js", "", "local echarts.min.js to inline into report.html")
	return cmd
}

func runMerge(app *App, o *mergeOptions) error {
	res, err := runner.Merge(runner.MergeOptions{
		Dirs: o.dirs, OutDir: o.out, Trace: o.trace, Lenient: o.lenient, Command: commandLine(o.args),
		HTML: reports.HTMLOptions{EChartsJS: o.echartsJS, Getenv: app.Getenv},
	})
	var refused *runner.RefusedError
	if errors.As(err, &refused) {
		return &exitError{code: 2, err: err}
	}
	if res != nil && res.Summary != nil {
		if werr := reports.WriteTerminal(app.Stdout, res.Summary); werr != nil && err == nil {
			err = werr
		}
		m := res.Summary.Run.Merged
		fmt.Fprintf(app.Stdout, "\nmerged %d of %d shards", len(m.Merged), m.Shards)
		if len(m.Missing)+len(m.Partial) > 0 {
			fmt.Fprintf(app.Stdout, " (missing %v, partial %v: %d requests dropped)", m.Missing, m.Partial, m.Dropped)
		}
		fmt.Fprintf(app.Stdout, "\nresults: %s (summary.json, requests.msgpack, report.html)\n", res.Dir)
		usecase.PrintCompareHint(app.env(), res.Dir)
	}
	return err
}
