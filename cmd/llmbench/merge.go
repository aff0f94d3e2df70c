package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/k8sjob"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/runner"
)

func init() { register("merge", newMergeCmd) }

type mergeOptions struct {
	out          string
	trace        string
	lenient      bool
	echartsJS    string
	dirs         []string
	traceSHA256  string
	printSummary bool
	args         []string
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
	fs.StringVar(&o.traceSHA256, "trace-sha256", "", "refuse the trace, when it is read, unless its SHA-256 is this (hex)")
	fs.BoolVar(&o.printSummary, "print-summary-json", false, "end the output with the merged summary.json on one line after \""+strings.TrimSpace(k8sjob.SummaryPrefix)+"\" (what llmbench k8s run reads from the merge pod's log)")
	fs.StringVar(&o.echartsJS, "echarts-js", "", "local echarts.min.js to inline into report.html")
	return cmd
}

func runMerge(app *App, o *mergeOptions) error {
	res, err := runner.Merge(runner.MergeOptions{
		Dirs: o.dirs, OutDir: o.out, Trace: o.trace, TraceSHA256: o.traceSHA256, Lenient: o.lenient, Command: commandLine(o.args),
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
		printCompareHint(app, res.Dir)
		if o.printSummary {
			if perr := printSummaryLine(app.Stdout, res.Dir); perr != nil && err == nil {
				err = perr
			}
		}
	}
	return err
}

// printSummaryLine writes dir's summary.json compacted onto one line after k8sjob.SummaryPrefix.
func printSummaryLine(w io.Writer, dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, "summary.json"), err)
	}
	_, err = fmt.Fprintf(w, "%s%s\n", k8sjob.SummaryPrefix, b.Bytes())
	return err
}
