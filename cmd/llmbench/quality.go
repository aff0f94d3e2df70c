package main

import (
	"github.com/llmbench/llmbench/usecase"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Quality under load (issue 17): --keep-output and the LLM judge flags of run and ab, and the
// grade and judge-calibrate commands.

func init() {
	register("grade", newGradeCmd)
	register("judge-calibrate", newJudgeCalibrateCmd)
}

// qualityFlags are the quality flags of run and ab.
type qualityFlags struct {
	fs             *pflag.FlagSet
	keepOutput     bool
	judgeEndpoint  string
	judgeModel     string
	judgeRubric    string
	judgeConc      int
	judgeAPIKeyEnv string
}

func addQualityFlags(fs *pflag.FlagSet, pairwise bool) *qualityFlags {
	f := &qualityFlags{fs: fs}
	fs.BoolVar(&f.keepOutput, "keep-output", false, "keep every response's answer text and tool calls in requests.msgpack (requests with expect checks always keep theirs)")
	mode := "grades each kept answer against the rubric (rubric mode)"
	if pairwise {
		mode = "compares the two arms' answers pair by pair, each pair asked twice with the order swapped; only consistent verdicts count (pairwise mode)"
	}
	fs.StringVar(&f.judgeEndpoint, "judge-endpoint", "", "base URL of an OpenAI-compatible server used as LLM judge after the measured runs: it "+mode)
	fs.StringVar(&f.judgeModel, "judge-model", "", "model name of the judge (needs --judge-endpoint)")
	fs.StringVar(&f.judgeRubric, "judge-rubric", "", "file with the judge's rubric (default: correct, complete, responsive, follows the asked format)")
	fs.IntVar(&f.judgeConc, "judge-concurrency", 4, "judge calls in flight at once")
	fs.StringVar(&f.judgeAPIKeyEnv, "judge-api-key-env", "", "name of the environment variable holding the judge's API key")
	return f
}

type gradeOptions struct {
	dir, trace string
	lenient    bool
	echartsJS  string
}

func newGradeCmd(app *App) *cobra.Command {
	o := &gradeOptions{}
	cmd := &cobra.Command{
		Use:   "grade DIR",
		Short: "Grade a finished run again, offline, against its trace's expect checks",
		Long: `Grade every request of results directory DIR again against the expect checks of its trace
(traces/FORMAT.md, "Quality checks"), from the answer text and tool calls the run kept in
DIR/requests.msgpack: the grades in requests.msgpack and the quality block of summary.json are
rewritten (every other number is left as it was) and report.html is rendered again. The same
trace gives the same numbers as the run; a trace whose checks were edited since grades the
same answers by the new checks. The trace must hold the run's request ids.`,
		Example: `  llmbench grade results/20261201-120000
  llmbench grade results/run1 --trace evals/support-v2.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			return usecase.Grade(app.env(), &usecase.GradeOptions{Dir: o.dir, Trace: o.trace, Lenient: o.lenient, EChartsJS: o.echartsJS})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.trace, "trace", "", "the trace with the expect checks (default: the trace the run replayed, as named in summary.json)")
	fs.BoolVar(&o.lenient, "lenient", false, "accept unknown fields in trace lines")
	fs.StringVar(&o.echartsJS, "echarts-js", "", "local echarts.min.js to inline into report.html")
	return cmd
}

type judgeCalibrateOptions struct {
	dir, labels string
}

func newJudgeCalibrateCmd(app *App) *cobra.Command {
	o := &judgeCalibrateOptions{}
	cmd := &cobra.Command{
		Use:   "judge-calibrate --labels FILE DIR",
		Short: "Measure how well a run's LLM-judge verdicts agree with human labels",
		Long: `Compare the rubric verdicts an LLM judge gave in results directory DIR (DIR/judge.jsonl,
written by run --judge-endpoint ... --judge-model ...) with human pass/fail labels, and report
the agreement: accuracy, Cohen's kappa (agreement beyond chance) and the confusion counts.
Calibrate a judge on a sample of about a hundred labelled answers before trusting it.

The labels file is JSON Lines: {"id": "REQUEST-ID", "label": "pass"} or "fail" (or true/false).`,
		Example: `  llmbench judge-calibrate --labels labels.jsonl results/run1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			return usecase.JudgeCalibrate(app.env(), &usecase.JudgeCalibrateOptions{Dir: o.dir, Labels: o.labels})
		},
	}
	cmd.Flags().StringVar(&o.labels, "labels", "", "JSONL file of human labels {\"id\",\"label\"}")
	_ = cmd.MarkFlagRequired("labels")
	return cmd
}
