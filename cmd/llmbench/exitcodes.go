package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
)

// Exit codes of every command (docs/comparing.md, "Exit codes").
const (
	exitOK          = 0   // done; no regression, no broken rule
	exitRegression  = 1   // a regression or a --fail-on rule broken (compare, ab, sweep --fail-on)
	exitBadInput    = 2   // bad flags, trace, results directory or other input
	exitRunFailed   = 3   // the run failed: no request succeeded, or more than --max-failure-rate failed
	exitInterrupted = 130 // interrupted (Ctrl-C, SIGTERM) after writing the results gathered so far
)

// failureFlags hold --max-failure-rate for the commands that measure.
type failureFlags struct{ maxRate float64 }

func addFailureFlags(fs *pflag.FlagSet) *failureFlags {
	f := &failureFlags{}
	fs.Float64Var(&f.maxRate, "max-failure-rate", runner.DefaultMaxFailureRate, "exit 3 when more than this fraction of requests failed (1: only when no request succeeded)")
	return f
}

func (f *failureFlags) check() error {
	if f.maxRate < 0 || f.maxRate > 1 || f.maxRate != f.maxRate {
		return &exitError{exitBadInput, fmt.Errorf("--max-failure-rate %g: want a fraction in [0, 1], e.g. 0.05", f.maxRate)}
	}
	return nil
}

// measuredExit maps the end of a measuring command, after its results are written, to the
// exit: 130 when it was interrupted, 3 when a run failed, else err (nil: 0).
func measuredExit(app *App, err error, f *failureFlags, sums ...*metrics.Summary) error {
	if err != nil {
		return err
	}
	if app.interrupted.Load() {
		return &exitError{exitInterrupted, errors.New("interrupted: the results gathered so far are written")}
	}
	for _, s := range sums {
		if why := runner.RunFailure(s, f.maxRate); why != "" {
			return &exitError{exitRunFailed, fmt.Errorf("the run failed: %s", why)}
		}
	}
	return nil
}
