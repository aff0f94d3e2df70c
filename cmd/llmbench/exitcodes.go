package main

import (
	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/usecase"
)

// Exit codes of every command (docs/comparing.md, "Exit codes").
const (
	exitOK          = usecase.ExitOK          // 0: done; no regression, no broken rule
	exitRegression  = usecase.ExitRegression  // 1: a regression or a --fail-on rule broken (compare, ab, sweep --fail-on)
	exitBadInput    = usecase.ExitBadInput    // 2: bad flags, trace, results directory or other input
	exitRunFailed   = usecase.ExitRunFailed   // 3: the run failed: no request succeeded, or more than --max-failure-rate failed
	exitLateStart   = usecase.ExitLateStart   // 4: a shard did not start: ready later than --start-at + --start-grace
	exitInterrupted = usecase.ExitInterrupted // 130: interrupted (Ctrl-C, SIGTERM) after writing the results gathered so far
)

// failureFlags hold --max-failure-rate for the commands that measure.
type failureFlags struct{ maxRate float64 }

func addFailureFlags(fs *pflag.FlagSet) *failureFlags {
	f := &failureFlags{}
	fs.Float64Var(&f.maxRate, "max-failure-rate", usecase.DefaultMaxFailureRate, "exit 3 when more than this fraction of requests failed (1: only when no request succeeded)")
	return f
}
