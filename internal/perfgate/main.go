// Command perfgate is llmbench's performance gate on itself, the Go part of .ci/perf
// (docs/performance.md, "The performance gate"): given two llmbench binaries, the baseline
// and the head, it measures both in rounds on this machine, each round both builds back to
// back with the order alternating (A B, B A, …), with `llmbench bench --json`, one point of
// the long-streams scenario and `simulate` of an overload trace, then judges every figure by
// the rounds' paired ratios head/base (metrics.ComparePairedRatio): a figure regresses when
// its interval excludes no change on the worse side and the ratio is worse than the figure's
// minimum effect. It prints a table and exits 1 on a regression, 2 when it cannot measure.
//
// It drives the binaries as processes and reads their JSON; it must not import loadgen,
// refengine, runner or the other packages whose speed it measures (the baseline is an older
// build of them), and it judges ratios only, never absolute thresholds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(cli(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// cli parses the flags into options and runs the gate.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("perfgate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	var kinds, benchArgs, traceDir string
	fs.StringVar(&o.base, "base", "", "the baseline llmbench binary")
	fs.StringVar(&o.head, "head", "", "the llmbench binary under test")
	fs.StringVar(&o.baseLabel, "base-label", "", "how the output names the baseline (default: its path)")
	fs.StringVar(&o.headLabel, "head-label", "", "how the output names the head (default: its path)")
	fs.IntVar(&o.rounds, "rounds", 6, "rounds; each measures both builds back to back, the order alternating")
	fs.StringVar(&kinds, "kinds", strings.Join(allKinds, ","), "measurements to run: bench (dispatch, ingest, arrival error), long (one long-streams point), sim (overload simulate)")
	fs.StringVar(&benchArgs, "bench-args", "", "more arguments for `llmbench bench --json --runs 1`, space-separated (e.g. --quick)")
	fs.IntVar(&o.longInFlight, "long-in-flight", 1000, "streams in flight of the long-streams point")
	fs.DurationVar(&o.longWindow, "long-window", 2*time.Second, "how long the long-streams point holds them all open")
	fs.IntVar(&o.simRequests, "sim-requests", 1_000_000, "requests of the overload trace simulate replays (at 200 req/s, about 10x the capacity of --gpu h200 --tp 2)")
	fs.StringVar(&traceDir, "trace-dir", "", "where the overload trace is kept between runs (made with the baseline's gen when missing; default: a temporary directory)")
	fs.DurationVar(&o.timeout, "timeout", 20*time.Minute, "the longest one invocation of a build may take")
	fs.StringVar(&o.jsonOut, "json", "", "also write every measurement and the verdict to this file as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "perfgate: unexpected arguments %q\n", fs.Args())
		return 2
	}
	o.kinds = strings.Split(kinds, ",")
	o.benchArgs = strings.Fields(benchArgs)
	if o.baseLabel == "" {
		o.baseLabel = o.base
	}
	if o.headLabel == "" {
		o.headLabel = o.head
	}
	work, err := os.MkdirTemp("", "perfgate-")
	if err != nil {
		fmt.Fprintf(stderr, "perfgate: %v\n", err)
		return 2
	}
	defer os.RemoveAll(work)
	o.workDir = work
	if traceDir == "" {
		traceDir = work
	}
	o.trace = filepath.Join(traceDir, traceName(o.simRequests))
	return run(ctx, o, stdout, stderr)
}
