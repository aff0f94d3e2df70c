package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/history"
)

func init() { register("history", newHistoryCmd) }

const historyDBHelp = "store: an SQLite file, or postgres://user:pass@host/db for a shared PostgreSQL (default $LLMBENCH_HISTORY_DB, else $XDG_DATA_HOME/llmbench/history.db, else ~/.local/share/llmbench/history.db)"

func historyEnv(app *App) history.Env {
	return history.Env{Stdout: app.Stdout, Getenv: app.Getenv, Version: version}
}

func newHistoryCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Keep every night's results in a database and find the nights performance changed",
		Long: `A results history: "history add" records runs (every scalar metric of summary.json, the run's
facts and tags) in an SQLite file or a PostgreSQL database; "history check" finds change points
in each metric's series (E-Divisive means with a permutation test) and exits 1 on a recent
regression; "history report" draws the trend; "history list" and "history show" print the runs.`,
	}
	cmd.AddCommand(newHistoryAddCmd(app), newHistoryCheckCmd(app), newHistoryReportCmd(app),
		newHistoryListCmd(app), newHistoryShowCmd(app))
	return cmd
}

func newHistoryAddCmd(app *App) *cobra.Command {
	a := history.AddArgs{}
	cmd := &cobra.Command{
		Use:   "add RESULTS_DIR...",
		Short: "Record results directories in the history (idempotent: a run is its results' content hash)",
		Long: `Record each results directory: every scalar metric of its summary.json (percentiles, throughput,
goodput, stalls, fluidity, failures, cost), the run's facts (llmbench version, --revision, trace
fingerprint, model, backend, engine flags, server version, machine) and --tag values. A run is
identified by the content hash of its results, so adding a directory again changes nothing:
backfill with a glob. Tags are part of a run's configuration: series never mix tags.`,
		Example: `  llmbench history add results/nightly-2026-12-01 --tag branch=main --tag gpu=h100 --revision $(git rev-parse HEAD)
  llmbench history add results/*/ --db postgres://bench@db.internal/llmbench`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.Dirs = args
			if err := history.RunAdd(cmd.Context(), historyEnv(app), a); err != nil {
				return &exitError{2, err}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&a.DB, "db", "", historyDBHelp)
	fs.StringArrayVar(&a.Tags, "tag", nil, "tag the runs key=value (repeatable), e.g. branch=main, gpu=h100")
	fs.StringVar(&a.Revision, "revision", "", "the git revision (or version label) that was measured")
	return cmd
}

func addCheckFlags(fs *pflag.FlagSet, a *history.CheckArgs) {
	fs.StringVar(&a.DB, "db", "", historyDBHelp)
	fs.StringArrayVar(&a.Metrics, "metric", nil, "metric to watch, e.g. ttft.p99 (repeatable or comma-separated; default "+strings.Join(history.DefaultCheckMetrics, ",")+")")
	fs.StringArrayVar(&a.Where, "where", nil, "only runs with this tag, key=value (repeatable; trace=FINGERPRINT and model=NAME too)")
	fs.StringVar(&a.MinChange, "min-change", "3%", "smallest change of the mean reported, as a percentage or fraction (0: every significant change)")
	fs.StringVar(&a.Since, "since", "", "fail only on regressions whose first run started since then: a time, a date or an age such as 36h or 7d (default: any)")
	fs.Float64Var(&a.Detect.Alpha, "alpha", history.DefaultAlpha, "significance level of a change (permutation test)")
	fs.Float64Var(&a.Detect.WeakAlpha, "weak-alpha", history.DefaultWeakAlpha, `significance level of a "weak" change (reported, never failing)`)
	fs.IntVar(&a.Detect.MinSize, "min-runs", history.DefaultMinSize, "fewest runs on each side of a change")
}

func newHistoryCheckCmd(app *App) *cobra.Command {
	a := history.CheckArgs{}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Find change points in each metric's history; exit 1 on a recent regression",
		Long: `Build each metric's series per configuration (same trace fingerprint and tags) in run order and
find its change points with E-Divisive means: the split that best separates two groups of runs
(energy distance, as Apache Otava and MongoDB use), tested against shuffles of the same runs,
so a noisier metric needs a bigger step. Changes are searched hierarchically at --weak-alpha
and kept at --alpha; weak changes need more runs to confirm. Each change names its first run,
the means before and after with 95% intervals, the magnitude, and what changed in the
configuration between the runs on either side.

Exit status: 0 no regression, 1 a regression (not weak, at least --min-change, first run since
--since), 2 bad input.`,
		Example: `  llmbench history check --metric ttft.p99 --metric tpot.p95 --where branch=main --since 36h
  llmbench history check --format markdown > comment.md`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			failed, err := history.RunCheck(cmd.Context(), historyEnv(app), a)
			if err != nil {
				return &exitError{2, err}
			}
			if failed {
				return &exitError{1, nil}
			}
			return nil
		},
	}
	addCheckFlags(cmd.Flags(), &a)
	cmd.Flags().StringVar(&a.Format, "format", "text", "output: text, markdown, json")
	return cmd
}

func newHistoryReportCmd(app *App) *cobra.Command {
	a := history.ReportArgs{}
	cmd := &cobra.Command{
		Use:   "report -o trend.html",
		Short: "Write the trend report: one chart per metric over runs, change points marked",
		Long: `Write a self-contained HTML page with one chart per metric and configuration over runs, the
level between change points and each change marked, a table of every change with what changed,
and under every chart a table of its numbers with a link to each run's results when they are
reachable. The change points are those of "history check" with the same flags.`,
		Example: `  llmbench history report -o trend.html --where branch=main --echarts-js node_modules/echarts/dist/echarts.min.js`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := history.RunReport(cmd.Context(), historyEnv(app), a); err != nil {
				return &exitError{2, err}
			}
			return nil
		},
	}
	addCheckFlags(cmd.Flags(), &a.CheckArgs)
	cmd.Flags().StringVarP(&a.Out, "out", "o", "", "the HTML file to write (required)")
	cmd.Flags().StringVar(&a.EChartsJS, "echarts-js", "", "local echarts.min.js to inline (default $LLMBENCH_ECHARTS_JS; otherwise the page loads it by URL)")
	return cmd
}

func newHistoryListCmd(app *App) *cobra.Command {
	a := history.ListArgs{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the recorded runs in run order",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := history.RunList(cmd.Context(), historyEnv(app), a); err != nil {
				return &exitError{2, err}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&a.DB, "db", "", historyDBHelp)
	fs.StringArrayVar(&a.Where, "where", nil, "only runs with this tag, key=value (repeatable)")
	fs.IntVar(&a.Last, "last", 0, "only the newest N runs (0: all)")
	return cmd
}

func newHistoryShowCmd(app *App) *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show one recorded run: facts, tags and every metric (RUN is an id or a hash prefix)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := history.RunShow(cmd.Context(), historyEnv(app), db, args[0]); err != nil {
				return &exitError{2, err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&db, "db", "", historyDBHelp)
	return cmd
}
