package usecase

import (
	"fmt"
	"time"

	"github.com/llmbench/llmbench/runner"
)

// ShardOptions make a run one shard of a run split across processes or machines (--shard,
// --start-at, --start-in, --clock-ref, --clock-wait).
type ShardOptions struct {
	Shard     string
	StartAt   string
	StartIn   time.Duration
	ClockRef  string
	ClockWait time.Duration
}

// Options checks the shard flags and builds runner's shard options for a run of trace against
// endpoint; nil when the run is not a shard. auto/N reads the index through getenv.
func (f *ShardOptions) Options(getenv func(string) string, trace, endpoint string) (*runner.ShardOptions, error) {
	if f.Shard == "" {
		if f.StartAt != "" || f.StartIn != 0 || f.ClockRef != "" || f.ClockWait != 0 {
			return nil, fmt.Errorf("--start-at, --start-in, --clock-ref and --clock-wait need --shard")
		}
		return nil, nil
	}
	sh, err := runner.ParseShard(f.Shard, getenv)
	if err != nil {
		return nil, err
	}
	if endpoint == "" {
		return nil, fmt.Errorf("--shard needs --endpoint: the shards share one target (the embedded engine is private to each process; `llmbench serve` runs one to share)")
	}
	if f.ClockWait < 0 {
		return nil, fmt.Errorf("--clock-wait %s: must be >= 0", f.ClockWait)
	}
	o := &runner.ShardOptions{Shard: sh, StartIn: f.StartIn, ClockRef: f.ClockRef, ClockWait: f.ClockWait, TracePath: trace}
	if f.StartAt != "" {
		if f.StartIn != 0 {
			return nil, fmt.Errorf("--start-at and --start-in exclude each other")
		}
		t, err := time.Parse(time.RFC3339Nano, f.StartAt)
		if err != nil {
			return nil, fmt.Errorf("--start-at %q: want RFC 3339, e.g. 2026-12-01T15:00:00Z", f.StartAt)
		}
		o.StartAt = t
	}
	if f.StartIn < 0 {
		return nil, fmt.Errorf("--start-in %s: must be >= 0", f.StartIn)
	}
	return o, nil
}
