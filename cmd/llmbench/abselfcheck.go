package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
)

// parseRepeats reads --runs: a count of runs per arm, or "auto" (up to maxRepeats).
func parseRepeats(s string, maxRepeats int) (n int, auto bool, err error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "auto") {
		if maxRepeats < 2 {
			return 0, false, fmt.Errorf("--max-runs %d: --runs auto needs at least 2", maxRepeats)
		}
		return 0, true, nil
	}
	n, err = strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, false, fmt.Errorf("--runs %q: want a number of runs per arm (>= 1) or auto", s)
	}
	return n, false, nil
}

// selfCheck runs n A/A experiments (both arms the same configuration of the embedded engine)
// and reports how many came out clean: exit 0 with no metric labelled better, worse or
// regressed. The claim it checks (docs/comparing.md): at least 9 of 10.
func selfCheck(ctx context.Context, app *App, opts runner.ABOptions, arms [2]runner.Arm, n int) (int, error) {
	base := opts.OutDir
	clean := 0
	for i := 1; i <= n; i++ {
		if ctx.Err() != nil {
			break
		}
		opts.OutDir = filepath.Join(base, fmt.Sprintf("self-check-%d", i))
		res, err := runner.AB(ctx, opts, arms[0], arms[1])
		if err != nil {
			return 2, fmt.Errorf("self-check %d: %w", i, err)
		}
		var labels []string
		for _, m := range res.Comparison.Metrics {
			switch m.Verdict {
			case metrics.VerdictBetter, metrics.VerdictWorse, metrics.VerdictChanged, metrics.VerdictRegressed:
				labels = append(labels, fmt.Sprintf("%s %s %+.1f%%", m.Name, m.Verdict, m.DeltaPct))
			}
		}
		state := "clean"
		if len(labels) > 0 || res.Comparison.Regressed {
			state = "labelled: " + strings.Join(labels, ", ")
		} else {
			clean++
		}
		fmt.Fprintf(app.Stdout, "self-check %d of %d: %d runs per arm, %s\n", i, n, res.Repeats, state)
	}
	fmt.Fprintf(app.Stdout, "self-check: %d of %d A/A experiments had no labels and passed the gate (the claim: at least 9 in 10); results in %s\n", clean, n, base)
	if clean*10 < n*9 {
		return 1, nil
	}
	return 0, nil
}
