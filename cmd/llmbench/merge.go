package main

import (
	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/usecase"
)

func init() { register("merge", newMergeCmd) }

type mergeOptions struct {
	out       string
	trace     string
	lenient   bool
	echartsJS string
	dirs      []string
	// issue 40: the trace's digest, and the summary line k8s run reads
	traceSHA256  string
	printSummary bool
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
			o.dirs = args
			return exitStatus(usecase.Merge(app.env(), o.options()))
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.out, "out", "o", "", "merged results directory (default results/<timestamp>-merged)")
	fs.StringVar(&o.trace, "trace", "", "the trace the shards replayed (default: the path they recorded); read only to count a missing or partial shard's requests")
	fs.BoolVar(&o.lenient, "lenient", false, "accept unknown fields in trace lines")
	fs.StringVar(&o.echartsJS, "echarts-js", "", "local echarts.min.js to inline into report.html")
	fs.StringVar(&o.traceSHA256, "trace-sha256", "", "refuse the trace, when it is read, unless its SHA-256 is this (hex)")
	fs.BoolVar(&o.printSummary, "print-summary-json", false, "end the output with the merged summary.json on one line after \""+usecase.SummaryLinePrefix+"\" (what llmbench k8s run reads from the merge pod's log)")
	return cmd
}

// options copies merge's flags and arguments into the use case's options.
func (o *mergeOptions) options() *usecase.MergeOptions {
	return &usecase.MergeOptions{Dirs: o.dirs, Out: o.out, Trace: o.trace, Lenient: o.lenient, EChartsJS: o.echartsJS,
		TraceSHA256: o.traceSHA256, PrintSummary: o.printSummary}
}
