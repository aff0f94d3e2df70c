package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/runner"
)

func init() { register("report", newReportCmd) }

type reportOptions struct {
	dir       string
	format    string
	recompute bool
	metrics   *metricFlags
	echartsJS string
	open      bool
}

func newReportCmd(app *App) *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Re-render a results directory's report (HTML, terminal, Markdown or CSV)",
		Long: `Re-render DIR/report.html from DIR/summary.json and DIR/requests.msgpack, or print the
summary as a terminal table, Markdown, or a per-request CSV. With --recompute (or any metric
flag: SLO, stall, fluidity, lag limit or price) the summary is recomputed from the records first and summary.json is
rewritten. A run that was killed before it wrote summary.json (interrupted twice, SIGKILL) is
rebuilt from the run facts it wrote at start (DIR/run.json) and DIR/requests.msgpack.
With --open the report is then opened in the default browser (xdg-open, open or start); where
none is installed its path is printed to open by hand.`,
		Example: `  llmbench report results/20261129-120000 --open
  llmbench report results/run1 --slo ttft=300ms,tpot=40ms
  llmbench report results/run1 --format csv > requests.csv`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			// Any metric flag recomputes: one that did not would be accepted and ignored.
			o.recompute = o.recompute || o.metrics.anyChanged()
			if o.echartsJS != "" && o.format != "html" {
				return fmt.Errorf("--echarts-js is inlined into report.html; it does nothing with --format %s", o.format)
			}
			if o.open && o.format != "html" {
				return fmt.Errorf("--open opens report.html; it does nothing with --format %s", o.format)
			}
			if err := runReport(app, o); err != nil {
				return err
			}
			if o.open {
				openInBrowser(cmd.Context(), app, filepath.Join(o.dir, runner.ReportFile))
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.format, "format", "html", "html (rewrites DIR/report.html), terminal (alias text), markdown (alias md), csv, json")
	fs.BoolVar(&o.recompute, "recompute", false, "recompute summary.json from requests.msgpack")
	fs.StringVar(&o.echartsJS, "echarts-js", "", "local echarts.min.js to inline into report.html (interactive charts offline; the drawn charts need none)")
	fs.BoolVar(&o.open, "open", false, "open report.html in the default browser afterwards (prints its path when no opener is installed)")
	o.metrics = addMetricFlags(fs)
	return cmd
}

func runReport(app *App, o *reportOptions) error {
	mopts, err := o.metrics.options() // checked first: a bad flag is named before DIR is read
	if err != nil {
		return err
	}
	sum, err := runner.ReadSummary(o.dir)
	if err != nil && !fileExists(filepath.Join(o.dir, runner.SummaryFile)) && fileExists(filepath.Join(o.dir, runner.RunFactsFile)) {
		if sum, err = runner.Rebuild(o.dir, reports.HTMLOptions{EChartsJS: o.echartsJS, Getenv: app.Getenv}); err != nil {
			return err
		}
		fmt.Fprintf(app.Stderr, "rebuilt %s and %s from %s and %s\n", filepath.Join(o.dir, runner.SummaryFile),
			filepath.Join(o.dir, runner.ReportFile), runner.RunFactsFile, runner.RecordsFile)
	}
	if err != nil {
		return err
	}
	recPath := filepath.Join(o.dir, runner.RecordsFile)
	if o.recompute {
		sum, err = runner.Resummarize(o.dir, sum, mopts)
		if err != nil {
			return err
		}
	}
	switch o.format {
	case "html":
		if err := runner.RenderReport(o.dir, sum, reports.HTMLOptions{EChartsJS: o.echartsJS, Getenv: app.Getenv}); err != nil {
			return err
		}
		fmt.Fprintf(app.Stdout, "wrote %s\n", filepath.Join(o.dir, runner.ReportFile))
		return nil
	case "terminal", "text":
		return reports.WriteTerminal(app.Stdout, sum)
	case "markdown", "md":
		return reports.WriteMarkdown(app.Stdout, sum)
	case "csv":
		return reports.WriteCSV(app.Stdout, metrics.FileSource(recPath).Each)
	case "json":
		return writeJSONTo(app.Stdout, sum)
	default:
		return fmt.Errorf("--format %q: want html, terminal, markdown, csv or json", o.format)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
