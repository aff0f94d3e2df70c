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
	// StartGrace is how late past StartAt a shard may be ready and still start (0:
	// DefaultStartGrace; negative refused); later it exits ExitLateStart without sending.
	// GraceGiven says --start-grace was given (it applies with --start-at only; 0 is then
	// refused).
	StartGrace time.Duration
	GraceGiven bool
}

// DefaultStartGrace is --start-grace's default: how late past the common start a shard (and,
// in k8s run, a shard pod) may be ready and still start.
const DefaultStartGrace = 10 * time.Second

// Options checks the shard flags and builds runner's shard options for a run of trace against
// endpoint; nil when the run is not a shard. auto/N reads the index through getenv.
func (f *ShardOptions) Options(getenv func(string) string, trace, endpoint string) (*runner.ShardOptions, error) {
	if f.Shard == "" {
		if f.StartAt != "" || f.StartIn != 0 || f.ClockRef != "" || f.ClockWait != 0 || f.GraceGiven {
			return nil, fmt.Errorf("--start-at, --start-in, --start-grace, --clock-ref and --clock-wait need --shard")
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
	if f.GraceGiven && f.StartAt == "" {
		return nil, fmt.Errorf("--start-grace applies to a common start: give --start-at")
	}
	grace := f.StartGrace
	if grace < 0 || (grace == 0 && f.GraceGiven) {
		return nil, fmt.Errorf("--start-grace %s: must be > 0 (how late past --start-at a shard may be ready and still start)", f.StartGrace)
	}
	if grace == 0 {
		grace = DefaultStartGrace
	}
	if f.StartAt != "" {
		o.StartGrace = grace
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
