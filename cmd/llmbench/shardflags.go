package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/runner"
)

// shardFlags make a run one shard of a run split across processes or machines.
type shardFlags struct {
	shard     string
	startAt   string
	startIn   time.Duration
	clockRef  string
	clockWait time.Duration
}

func addShardFlags(fs *pflag.FlagSet) *shardFlags {
	f := &shardFlags{}
	fs.StringVar(&f.shard, "shard", "", "send only shard I of N of the trace (I/N, 0-based; auto/N takes I from $JOB_COMPLETION_INDEX); merge the shards with llmbench merge")
	fs.StringVar(&f.startAt, "start-at", "", "with --shard: common start time, RFC 3339 (e.g. 2026-12-01T15:00:00Z), on the clock reference")
	fs.DurationVar(&f.startIn, "start-in", 0, "with --shard: start this long from now on this machine's clock (merge rebases the shards' times)")
	fs.StringVar(&f.clockRef, "clock-ref", "", "with --shard: base URL of a llmbench time endpoint (/llmbench/time, served by llmbench serve and llmbench clock) to measure the clock offset against (default: the endpoint)")
	fs.DurationVar(&f.clockWait, "clock-wait", 0, "with --shard: keep trying the clock reference for this long when it does not answer (a time server starting beside the shards)")
	return f
}

// options is nil without --shard.
func (f *shardFlags) options(app *App, trace, endpoint string) (*runner.ShardOptions, error) {
	if f.shard == "" {
		if f.startAt != "" || f.startIn != 0 || f.clockRef != "" || f.clockWait != 0 {
			return nil, fmt.Errorf("--start-at, --start-in, --clock-ref and --clock-wait need --shard")
		}
		return nil, nil
	}
	sh, err := runner.ParseShard(f.shard, app.Getenv)
	if err != nil {
		return nil, err
	}
	if endpoint == "" {
		return nil, fmt.Errorf("--shard needs --endpoint: the shards share one target (the embedded engine is private to each process; `llmbench serve` runs one to share)")
	}
	if f.clockWait < 0 {
		return nil, fmt.Errorf("--clock-wait %s: must be >= 0", f.clockWait)
	}
	o := &runner.ShardOptions{Shard: sh, StartIn: f.startIn, ClockRef: f.clockRef, ClockWait: f.clockWait, TracePath: trace}
	if f.startAt != "" {
		if f.startIn != 0 {
			return nil, fmt.Errorf("--start-at and --start-in exclude each other")
		}
		t, err := time.Parse(time.RFC3339Nano, f.startAt)
		if err != nil {
			return nil, fmt.Errorf("--start-at %q: want RFC 3339, e.g. 2026-12-01T15:00:00Z", f.startAt)
		}
		o.StartAt = t
	}
	if f.startIn < 0 {
		return nil, fmt.Errorf("--start-in %s: must be >= 0", f.startIn)
	}
	return o, nil
}
