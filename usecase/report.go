package usecase

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmbench/llmbench/k8sjob"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/runner"
)

// ReportOptions are `llmbench report`'s options: a results directory rendered again, its
// summary optionally recomputed from requests.msgpack.
type ReportOptions struct {
	Dir    string
	Format string
	// Recompute recomputes summary.json; any metric flag given implies it (Metrics.Changed).
	Recompute bool
	Metrics   MetricOptions
	EChartsJS string
	// Open opens report.html afterwards (the CLI does; here it only needs --format html).
	Open bool
}

// ReportPath is the report Report rewrites in dir with --format html.
func ReportPath(dir string) string { return filepath.Join(dir, runner.ReportFile) }

// Report renders the results directory in Format (rewriting report.html for html), first
// rebuilding a run killed before it wrote summary.json.
func Report(env *Env, o *ReportOptions) error {
	for _, n := range metricFlagNames {
		o.Recompute = o.Recompute || o.Metrics.Changed.Has(n) // a metric flag that did not recompute would be ignored
	}
	if o.EChartsJS != "" && o.Format != "html" {
		return fmt.Errorf("--echarts-js is inlined into report.html; it does nothing with --format %s", o.Format)
	}
	if o.Open && o.Format != "html" {
		return fmt.Errorf("--open opens report.html; it does nothing with --format %s", o.Format)
	}
	mopts, err := o.Metrics.Options() // checked first: a bad flag is named before DIR is read
	if err != nil {
		return err
	}
	sum, err := o.summary(env)
	if err != nil {
		return err
	}
	if o.Recompute {
		if sum, err = runner.Resummarize(o.Dir, sum, mopts); err != nil {
			return err
		}
	}
	return o.write(env, sum)
}

// summary reads the directory's summary, or rebuilds it (and report.html) from run.json and
// requests.msgpack when the run was killed before writing it.
func (o *ReportOptions) summary(env *Env) (*metrics.Summary, error) {
	sum, err := runner.ReadSummary(o.Dir)
	if err != nil && !fileExists(filepath.Join(o.Dir, runner.SummaryFile)) && fileExists(filepath.Join(o.Dir, runner.RunFactsFile)) {
		if sum, err = runner.Rebuild(o.Dir, reports.HTMLOptions{EChartsJS: o.EChartsJS, Getenv: env.Getenv}); err != nil {
			return nil, err
		}
		fmt.Fprintf(env.Stderr, "rebuilt %s and %s from %s and %s\n", filepath.Join(o.Dir, runner.SummaryFile),
			filepath.Join(o.Dir, runner.ReportFile), runner.RunFactsFile, runner.RecordsFile)
	}
	return sum, err
}

// write renders sum in Format.
func (o *ReportOptions) write(env *Env, sum *metrics.Summary) error {
	switch o.Format {
	case "html":
		if err := runner.RenderReport(o.Dir, sum, reports.HTMLOptions{EChartsJS: o.EChartsJS, Getenv: env.Getenv}); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "wrote %s\n", filepath.Join(o.Dir, runner.ReportFile))
		return nil
	case "terminal", "text":
		return reports.WriteTerminal(env.Stdout, sum)
	case "markdown", "md":
		return reports.WriteMarkdown(env.Stdout, sum)
	case "csv":
		return reports.WriteCSV(env.Stdout, metrics.FileSource(filepath.Join(o.Dir, runner.RecordsFile)).Each)
	case "json":
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	default:
		return fmt.Errorf("--format %q: want html, terminal, markdown, csv or json", o.Format)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// MergeOptions are `llmbench merge`'s options: the shards' results directories merged into
// one.
type MergeOptions struct {
	Dirs      []string
	Out       string
	Trace     string
	Lenient   bool
	EChartsJS string
	// TraceSHA256 refuses the trace, once read, with another digest (--trace-sha256).
	TraceSHA256 string
	// PrintSummary ends the output with the merged summary.json on one line after
	// k8sjob.SummaryPrefix (--print-summary-json: what k8s run reads from the merge pod's log).
	PrintSummary bool
}

// Merge merges the shards, prints the merged summary and which shards were merged, and
// returns the command's exit status (2 when the shards are refused) and the error.
func Merge(env *Env, o *MergeOptions) (int, error) {
	res, err := runner.Merge(runner.MergeOptions{
		Dirs: o.Dirs, OutDir: o.Out, Trace: o.Trace, TraceSHA256: o.TraceSHA256, Lenient: o.Lenient, Command: CommandLine(env.Args),
		HTML: reports.HTMLOptions{EChartsJS: o.EChartsJS, Getenv: env.Getenv},
	})
	var refused *runner.RefusedError
	if errors.As(err, &refused) {
		return ExitBadInput, err
	}
	if res != nil && res.Summary != nil {
		if werr := reports.WriteTerminal(env.Stdout, res.Summary); werr != nil && err == nil {
			err = werr
		}
		m := res.Summary.Run.Merged
		fmt.Fprintf(env.Stdout, "\nmerged %d of %d shards", len(m.Merged), m.Shards)
		if len(m.Missing)+len(m.Partial) > 0 {
			fmt.Fprintf(env.Stdout, " (missing %v, partial %v: %d requests dropped)", m.Missing, m.Partial, m.Dropped)
		}
		fmt.Fprintf(env.Stdout, "\nresults: %s (summary.json, requests.msgpack, report.html)\n", res.Dir)
		PrintCompareHint(env, res.Dir)
		if o.PrintSummary {
			if perr := printSummaryLine(env.Stdout, res.Dir); perr != nil && err == nil {
				err = perr
			}
		}
	}
	return exitOf(err)
}

// SummaryLinePrefix is k8sjob.SummaryPrefix without its trailing space, for help texts.
var SummaryLinePrefix = strings.TrimSpace(k8sjob.SummaryPrefix)

// printSummaryLine writes dir's summary.json compacted onto one line after k8sjob.SummaryPrefix.
func printSummaryLine(w io.Writer, dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, runner.SummaryFile))
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, runner.SummaryFile), err)
	}
	_, err = fmt.Fprintf(w, "%s%s\n", k8sjob.SummaryPrefix, b.Bytes())
	return err
}

// ServeClock serves the time endpoint of sharded runs on addr until ctx ends or an interrupt
// comes, saying where on stdout.
func ServeClock(ctx context.Context, env *Env, addr string) error {
	return runner.ServeClock(ctx, addr, env.Interrupts, func(a string) {
		fmt.Fprintf(env.Stdout, "serving %s on http://%s\n", runner.ClockPath, a)
	})
}
