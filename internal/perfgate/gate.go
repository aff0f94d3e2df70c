package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// options are the gate's settings (main.go's flags). Zero values are refused by check, not
// defaulted: the flags carry the defaults.
type options struct {
	// base and head are the two llmbench binaries; the labels name them in the output.
	base, head           string
	baseLabel, headLabel string
	// rounds is the number of rounds; each measures both builds, alternating which goes first.
	rounds int
	// kinds are the measurements to run (allKinds).
	kinds []string
	// benchArgs are appended to `llmbench bench --json --runs 1`.
	benchArgs []string
	// longInFlight and longWindow shape the long-streams point.
	longInFlight int
	longWindow   time.Duration
	// simRequests is the overload trace's length; trace its path (made with the baseline's
	// gen when missing).
	simRequests int
	trace       string
	// workDir holds the simulations' results directories while they run.
	workDir string
	// timeout bounds each invocation.
	timeout time.Duration
	// jsonOut, when set, receives every measurement and the verdict as JSON.
	jsonOut string
}

func (o *options) check() error {
	switch {
	case o.base == "" || o.head == "":
		return fmt.Errorf("-base and -head name the two llmbench binaries to compare")
	case o.rounds < 2 || o.rounds%2 != 0:
		return fmt.Errorf("-rounds %d: an even number, at least 2, so that each build goes first equally often (A B, B A, ...); the interval comes from the spread between rounds", o.rounds)
	case len(o.kinds) == 0:
		return fmt.Errorf("-kinds is empty: want some of %s", strings.Join(allKinds, ","))
	case o.timeout <= 0:
		return fmt.Errorf("-timeout must be > 0")
	}
	for i, k := range o.kinds {
		if !slices.Contains(allKinds, k) {
			return fmt.Errorf("-kinds: %q is not one of %s", k, strings.Join(allKinds, ","))
		}
		if slices.Contains(o.kinds[:i], k) {
			return fmt.Errorf("-kinds: %q twice", k)
		}
	}
	if slices.Contains(o.kinds, kindLong) && (o.longInFlight < 1 || o.longWindow <= 0) {
		return fmt.Errorf("-long-in-flight and -long-window must be > 0")
	}
	if slices.Contains(o.kinds, kindSim) && o.simRequests < 1 {
		return fmt.Errorf("-sim-requests must be > 0")
	}
	for _, b := range []string{o.base, o.head} {
		st, err := os.Stat(b)
		if err != nil {
			return err
		}
		if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("%s: not an executable file", b)
		}
	}
	return nil
}

// run measures both builds in rounds, judges every figure and prints the table: exit status
// 0 when nothing regressed, 1 when a figure did, 2 when the gate could not measure.
func run(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	if err := o.check(); err != nil {
		fmt.Fprintf(stderr, "perfgate: %v\n", err)
		return 2
	}
	t0 := time.Now()
	if slices.Contains(o.kinds, kindSim) {
		if err := ensureTrace(ctx, o); err != nil {
			fmt.Fprintf(stderr, "perfgate: %v\n", err)
			return 2
		}
	}
	rounds, err := measureRounds(ctx, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "perfgate: %v\n", err)
		return 2
	}
	v, err := judge(rounds, figuresOf(o.kinds))
	if err != nil {
		fmt.Fprintf(stderr, "perfgate: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "perf gate: base %s, head %s\n%s\n\n", o.baseLabel, o.headLabel, o.design(len(v.Rows)))
	if err := v.print(stdout); err != nil {
		fmt.Fprintf(stderr, "perfgate: %v\n", err)
		return 2
	}
	if o.jsonOut != "" {
		if err := writeJSON(o, rounds, v); err != nil {
			fmt.Fprintf(stderr, "perfgate: %v\n", err)
			return 2
		}
	}
	fmt.Fprintf(stdout, "\n%.0f s in all\n", time.Since(t0).Seconds())
	if len(v.Regressed) > 0 {
		fmt.Fprintf(stdout, "perf gate FAILED: %s regressed against the baseline\n", strings.Join(v.Regressed, ", "))
		return 1
	}
	fmt.Fprintln(stdout, "perf gate passed: no figure regressed beyond its minimum effect with confidence")
	return 0
}

// design says in words what was measured and how it was judged.
func (o *options) design(k int) string {
	var what []string
	for _, kind := range o.kinds {
		switch kind {
		case kindBench:
			what = append(what, strings.TrimSpace("bench --runs 1 "+strings.Join(o.benchArgs, " ")))
		case kindLong:
			what = append(what, fmt.Sprintf("bench --scenario long-streams --in-flight %d --window %s", o.longInFlight, o.longWindow))
		case kindSim:
			what = append(what, fmt.Sprintf("simulate of %d chat requests at %d req/s (--gpu h200 --tp 2: about 10x its capacity)", o.simRequests, simRate))
		}
	}
	return fmt.Sprintf("%d rounds, each both builds back to back, the order alternating (A B, B A, ...): %s.\n"+
		"Each figure: the geometric mean of the rounds' ratios head/base with a Student-t interval over the rounds at %s "+
		"(%.0f%% family-wise over %d figures, Bonferroni); it regresses when the interval excludes 1 on the worse side "+
		"and the ratio is worse than its minimum effect.",
		o.rounds, strings.Join(what, "; "), pct(gateConfidence(k)), (1-familyAlpha)*100, k)
}

// measureRounds runs the rounds: round r measures every kind on both builds, base first in
// even rounds and head first in odd ones, so a drift of the machine over a round weighs on
// both sides alike over two rounds.
func measureRounds(ctx context.Context, o *options, log io.Writer) ([]round, error) {
	rounds := make([]round, o.rounds)
	for r := range rounds {
		rounds[r] = round{Base: map[string]measurement{}, Head: map[string]measurement{}}
		order := []bool{false, true} // head?
		if r%2 == 1 {
			order = []bool{true, false}
		}
		for _, kind := range o.kinds {
			for _, head := range order {
				bin, side, dst := o.base, "base", rounds[r].Base
				if head {
					bin, side, dst = o.head, "head", rounds[r].Head
				}
				m, err := measureKind(ctx, o, kind, bin)
				if err != nil {
					return nil, fmt.Errorf("round %d, %s, %s: %w", r+1, kind, side, err)
				}
				dst[kind] = m
				fmt.Fprintf(log, "perfgate: round %d/%d %s %s: %s (%.1f s, %.1f s CPU)\n", r+1, o.rounds, kind, side, valuesText(m), m.WallS, m.CPUS)
			}
		}
	}
	return rounds, nil
}

func measureKind(ctx context.Context, o *options, kind, bin string) (measurement, error) {
	switch kind {
	case kindBench:
		return measureBench(ctx, o, bin)
	case kindLong:
		return measureLong(ctx, o, bin)
	}
	return measureSim(ctx, o, bin)
}

// valuesText lists a measurement's figures in table order.
func valuesText(m measurement) string {
	var parts []string
	for _, f := range figures {
		if v, ok := m.Values[f.name]; ok {
			parts = append(parts, fmt.Sprintf("%s "+f.format, f.name, v))
		}
	}
	return strings.Join(parts, ", ")
}

// writeJSON writes every measurement and the verdict to o.jsonOut.
func writeJSON(o *options, rounds []round, v verdict) error {
	b, err := json.MarshalIndent(struct {
		Base    string  `json:"base"`
		Head    string  `json:"head"`
		Rounds  []round `json:"rounds"`
		Verdict verdict `json:"verdict"`
	}{o.baseLabel, o.headLabel, rounds, v}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.jsonOut), 0o755); err != nil {
		return err
	}
	return os.WriteFile(o.jsonOut, append(b, '\n'), 0o644)
}
