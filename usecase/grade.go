package usecase

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/llmbench/llmbench/quality/judge"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
)

// GradeOptions are `llmbench grade`'s options: a results directory and its trace (default:
// the one it recorded).
type GradeOptions struct {
	Dir, Trace string
	Lenient    bool
	EChartsJS  string
}

// Grade grades a finished run again, offline, against its trace's expect checks, rewrites its
// results and prints the quality summary.
func Grade(env *Env, o *GradeOptions) error {
	path := o.Trace
	if path == "" {
		sum, err := runner.ReadSummary(o.Dir)
		if err != nil {
			return err
		}
		if path = sum.Run.Trace; path == "" {
			return fmt.Errorf("%s does not name its trace: give --trace", o.Dir)
		}
	}
	src, err := traces.OpenFile(path, traces.ReadOptions{Lenient: o.Lenient})
	if err != nil {
		return fmt.Errorf("%w (give the run's trace with --trace)", err)
	}
	res, err := runner.Regrade(o.Dir, src, reports.HTMLOptions{EChartsJS: o.EChartsJS, Getenv: env.Getenv})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "graded %d requests (%d grades changed)\n", res.Graded, res.Changed)
	if err := reports.WriteQualityTerminal(env.Stdout, res.Summary.Quality); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "\nresults: %s (requests.msgpack, summary.json, report.html rewritten)\n", o.Dir)
	return nil
}

// JudgeCalibrateOptions are `llmbench judge-calibrate`'s options: a judged run and a file of
// human labels.
type JudgeCalibrateOptions struct {
	Dir, Labels string
}

// JudgeCalibrate measures a run's judge against human labels: accuracy, Cohen's kappa and
// the confusion counts.
func JudgeCalibrate(env *Env, o *JudgeCalibrateOptions) error {
	f, err := os.Open(o.Labels)
	if err != nil {
		return fmt.Errorf("--labels: %w", err)
	}
	defer f.Close()
	labels, err := judge.ReadLabels(f, o.Labels)
	if err != nil {
		return err
	}
	vs, err := runner.ReadVerdicts(o.Dir)
	if err != nil {
		return err
	}
	a := judge.Calibrate(vs, labels)
	if a.Compared == 0 {
		return fmt.Errorf("no request of %s has both a parsed verdict and a label (check the ids)", filepath.Join(o.Dir, runner.JudgeFile))
	}
	kappa := "undefined (both raters gave a single label to everything)"
	if !math.IsNaN(a.Kappa) {
		kappa = fmt.Sprintf("%.3f", a.Kappa)
	}
	fmt.Fprintf(env.Stdout, "compared   %d answers with both a verdict and a label (%d verdicts without a label, %d labels without a verdict)\n", a.Compared, a.JudgeOnly, a.LabelOnly)
	fmt.Fprintf(env.Stdout, "accuracy   %.1f%% (%d agree)\n", a.Accuracy*100, a.Agree)
	fmt.Fprintf(env.Stdout, "kappa      %s\n", kappa)
	fmt.Fprintf(env.Stdout, "confusion  judge pass/human pass %d · judge fail/human fail %d · judge pass/human fail %d · judge fail/human pass %d\n",
		a.BothPass, a.BothFail, a.FalsePass, a.FalseFail)
	return nil
}
