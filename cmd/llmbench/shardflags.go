package main

import (
	"time"

	"github.com/llmbench/llmbench/usecase"
	"github.com/spf13/pflag"
)

// shardFlags make a run one shard of a run split across processes or machines.
type shardFlags struct {
	shard     string
	startAt   string
	startIn   time.Duration
	clockRef  string
	clockWait time.Duration
	grace     time.Duration
	fs        *pflag.FlagSet
}

func addShardFlags(fs *pflag.FlagSet) *shardFlags {
	f := &shardFlags{fs: fs}
	fs.StringVar(&f.shard, "shard", "", "send only shard I of N of the trace (I/N, 0-based; auto/N takes I from $JOB_COMPLETION_INDEX); merge the shards with llmbench merge")
	fs.StringVar(&f.startAt, "start-at", "", "with --shard: common start time, RFC 3339 (e.g. 2026-12-01T15:00:00Z), on the clock reference")
	fs.DurationVar(&f.startIn, "start-in", 0, "with --shard: start this long from now on this machine's clock (merge rebases the shards' times)")
	fs.StringVar(&f.clockRef, "clock-ref", "", "with --shard: base URL of a llmbench time endpoint (/llmbench/time, served by llmbench serve and llmbench clock) to measure the clock offset against (default: the endpoint)")
	fs.DurationVar(&f.clockWait, "clock-wait", 0, "with --shard: keep trying the clock reference for this long when it does not answer (a time server starting beside the shards)")
	fs.DurationVar(&f.grace, "start-grace", usecase.DefaultStartGrace, "with --start-at: a shard ready later than this past the common start does not start (exit 4) rather than replay a schedule the other shards have replayed")
	return f
}

func (f *shardFlags) opts() usecase.ShardOptions {
	return usecase.ShardOptions{Shard: f.shard, StartAt: f.startAt, StartIn: f.startIn, ClockRef: f.clockRef, ClockWait: f.clockWait,
		StartGrace: f.grace, GraceGiven: f.fs.Changed("start-grace")}
}
