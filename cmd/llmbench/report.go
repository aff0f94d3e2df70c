package main

import (
	"github.com/llmbench/llmbench/usecase"
	"github.com/spf13/cobra"
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
			if err := usecase.Report(app.env(), o.options()); err != nil {
				return err
			}
			if o.open {
				openInBrowser(cmd.Context(), app, usecase.ReportPath(o.dir))
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

// options copies report's flags into the use case's options.
func (o *reportOptions) options() *usecase.ReportOptions {
	return &usecase.ReportOptions{Dir: o.dir, Format: o.format, Recompute: o.recompute, Metrics: o.metrics.opts(),
		EChartsJS: o.echartsJS, Open: o.open}
}
