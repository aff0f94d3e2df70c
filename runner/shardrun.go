package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
)

// ShardFile is the shard's facts in its results directory, written before the run starts so
// that merge can account for a shard that was killed (see docs/distributed.md).
const ShardFile = "shard.json"

// ShardSchema names the shard.json format.
const ShardSchema = "llmbench.shard/v1"

// ShardOptions make a run one shard of a run split across processes or machines.
type ShardOptions struct {
	Shard Shard
	// StartAt is the common start on the reference clock (--start-at): the shard waits until
	// its clock, corrected by the measured offset, reads StartAt. When zero, StartIn (>= 0)
	// starts the shard that long after now on its own clock (--start-in); merge then rebases
	// each shard's times onto the earliest epoch.
	StartAt time.Time
	StartIn time.Duration
	// ClockRef is the base URL of a llmbench time endpoint (ClockPath) to measure the clock
	// offset against; "" uses the target's.
	ClockRef string
	// TracePath is the trace file, recorded so that merge can find the requests of a shard
	// that did not finish.
	TracePath string
	// ClockWait keeps trying the time endpoint, once a second, for this long when it does
	// not answer (a time server starting beside the shards); 0 tries once. With StartAt and
	// StartGrace the wait also ends at StartAt + StartGrace.
	ClockWait time.Duration
	// StartGrace, with StartAt, is how late past StartAt the shard may be ready and still
	// start (its first requests then go late, counted as schedule lag); a shard ready later
	// refuses to start with a *LateStartError rather than replay a schedule that has passed
	// while the other shards replay theirs. 0: no limit.
	StartGrace time.Duration
	// Now is the wall clock (time.Now when nil).
	Now func() time.Time
	// Client makes the clock requests (a client with a 5 s timeout when nil).
	Client *http.Client
}

// ShardFacts is shard.json: what merge needs to combine the shards and to check that they
// belong together.
type ShardFacts struct {
	Schema string `json:"schema"`
	metrics.ShardInfo
	// StartAt is the common start on the reference clock ("" with --start-in).
	StartAt string `json:"start_at,omitempty"`
	// Trace is the trace's path (absolute) and TraceRequests its length; PerShard counts each
	// shard's requests for one pass.
	Trace         string `json:"trace"`
	TraceRequests int    `json:"trace_requests"`
	PerShard      []int  `json:"per_shard"`
	// The schedule, to place the records of requests a shard never finished: Repeat passes of
	// PeriodNs each at RateScale; RunEndNs, WarmupNs and CooldownNs fix the phases.
	Repeat     int     `json:"repeat"`
	RateScale  float64 `json:"rate_scale"`
	PeriodNs   int64   `json:"period_ns"`
	RunEndNs   int64   `json:"run_end_ns"`
	WarmupNs   int64   `json:"warmup_ns"`
	CooldownNs int64   `json:"cooldown_ns"`
	// WholeTrace is the whole trace's fingerprint (its Digest is TraceFingerprint): the merged
	// summary's run.trace_fingerprint, so that a merged run and a one-machine run of the same
	// trace compare like with like. The shard's own summary keeps its subset's.
	WholeTrace *metrics.TraceFingerprint `json:"whole_trace_fingerprint,omitempty"`
	// Config is every run setting the shards must share; Metrics the summary options.
	Config  map[string]string `json:"config"`
	Metrics metrics.Options   `json:"metrics_options"`
}

// prepareShard narrows s to its shard: it plans the split, measures the clock, fixes the
// epoch, writes shard.json into the results directory and records the shard in the run facts.
func prepareShard(ctx context.Context, s *HTTPRun, o ShardOptions) error {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	sh := o.Shard
	if sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count {
		return fmt.Errorf("shard %s: want 0 <= I < N", sh)
	}
	plan, err := PlanShards(s.Trace, sh.Count)
	if err != nil {
		return err
	}
	src, err := ShardSource(s.Trace, sh)
	if err != nil {
		return err
	}
	if src.Len() == 0 {
		return fmt.Errorf("shard %s has no requests: the trace's %d requests (sessions kept whole) all hash to other shards; use fewer shards", sh, plan.Whole.Len)
	}
	clk, err := shardClock(ctx, s, o, now)
	if err != nil {
		return err
	}
	epoch := shardEpoch(o, clk, now)
	if err := checkLate(o, clk, epoch, now()); err != nil {
		return err
	}
	if s.OutDir == "" {
		s.OutDir = fmt.Sprintf("%s-shard-%d-of-%d", DefaultOutDir(epoch), sh.Index, sh.Count)
	}
	repeat, rate, period, runEnd := shardSchedule(s.Load, plan.Whole)
	tracePath := o.TracePath
	if abs, err := filepath.Abs(tracePath); err == nil && tracePath != "" {
		tracePath = abs
	}
	f := &ShardFacts{
		Schema: ShardSchema,
		ShardInfo: metrics.ShardInfo{Index: sh.Index, Count: sh.Count, TraceFingerprint: plan.Fingerprint.Digest,
			Requests: plan.PerShard[sh.Index] * repeat, Epoch: epoch.UTC().Format(time.RFC3339Nano), Clock: clk},
		Trace: tracePath, TraceRequests: plan.Whole.Len, PerShard: plan.PerShard, WholeTrace: plan.Fingerprint,
		Repeat: repeat, RateScale: rate, PeriodNs: int64(period), RunEndNs: int64(runEnd),
		WarmupNs: int64(s.Load.Warmup), CooldownNs: int64(s.Load.Cooldown),
		Config: shardConfig(s), Metrics: s.Metrics,
	}
	if !o.StartAt.IsZero() {
		f.StartAt = o.StartAt.UTC().Format(time.RFC3339Nano)
	}
	if err := os.MkdirAll(s.OutDir, dirPerm); err != nil {
		return fmt.Errorf("create results directory: %w", err)
	}
	if err := WriteJSON(filepath.Join(s.OutDir, ShardFile), f); err != nil {
		return err
	}
	info := f.ShardInfo
	s.Info.Shard = &info
	s.Trace = src
	s.Load.StartAt = epoch
	s.Load.Whole = plan.Whole
	return nil
}

// shardClock measures this machine's clock against the clock reference (o.ClockRef, else the
// target's server), retrying for up to o.ClockWait while it does not answer. A reference
// that never answers gives a clock of method "none" with an unknown bound (-1), not an
// error; an interruption while waiting is one.
func shardClock(ctx context.Context, s *HTTPRun, o ShardOptions, now func() time.Time) (metrics.Clock, error) {
	client := o.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	ref := o.ClockRef
	if ref == "" {
		ref = strings.TrimSuffix(strings.TrimSuffix(s.Load.Target.URL, "/"), "/v1")
	}
	clk, cerr := MeasureClock(ctx, client, ref, now, ClockSamples)
	until := now().Add(o.ClockWait)
	if last := o.StartAt.Add(o.StartGrace); !o.StartAt.IsZero() && o.StartGrace > 0 && last.Before(until) {
		until = last // past it the shard would be late anyway
	}
	for cerr != nil && now().Before(until) {
		select {
		case <-ctx.Done():
			return clk, ctx.Err()
		case <-s.Interrupts.C:
			return clk, fmt.Errorf("interrupted while waiting for the clock reference %s (%v)", ref, cerr)
		case <-time.After(time.Second):
		}
		clk, cerr = MeasureClock(ctx, client, ref, now, ClockSamples)
	}
	if cerr != nil {
		clk = metrics.Clock{Method: "none", Reference: clk.Reference, BoundNs: -1, Error: cerr.Error()}
	}
	return clk, nil
}

// LateStartError is a shard that was ready to send later than its common start plus the
// grace (ShardOptions.StartGrace): it does not start, so that no shard replays a schedule the
// others have already replayed. The CLI exits 4 (usecase.ExitLateStart).
type LateStartError struct {
	Shard   Shard
	StartAt time.Time
	// Late is how long after StartAt the shard was ready (on the reference clock when its
	// offset was measured); Grace the limit.
	Late, Grace time.Duration
	// Clock says why the clock reference was not measured, when it was not ("" when it was).
	Clock string
}

func (e *LateStartError) Error() string {
	msg := fmt.Sprintf("shard %s did not start: it was ready %s after the common start %s, more than --start-grace %s; a late shard would replay a schedule the other shards have already replayed",
		e.Shard, e.Late.Round(time.Millisecond), e.StartAt.UTC().Format(time.RFC3339), e.Grace)
	if e.Clock != "" {
		msg += fmt.Sprintf(" (the clock reference did not answer: %s)", e.Clock)
	}
	return msg + "; start the shards again with a later --start-at"
}

// checkLate is a *LateStartError when the shard, ready at now (its epoch on this machine is
// epoch), is later than o.StartAt + o.StartGrace.
func checkLate(o ShardOptions, clk metrics.Clock, epoch, now time.Time) error {
	if o.StartAt.IsZero() || o.StartGrace <= 0 {
		return nil
	}
	if late := now.Sub(epoch); late > o.StartGrace {
		return &LateStartError{Shard: o.Shard, StartAt: o.StartAt, Late: late, Grace: o.StartGrace, Clock: clk.Error}
	}
	return nil
}

// shardEpoch is the run's common start on this machine's wall clock: o.StartAt corrected by
// the measured offset, else o.StartIn from now, else now.
func shardEpoch(o ShardOptions, clk metrics.Clock, now func() time.Time) time.Time {
	var epoch time.Time
	switch {
	case !o.StartAt.IsZero():
		epoch = o.StartAt.Add(-time.Duration(clk.OffsetNs))
	case o.StartIn > 0:
		epoch = now().Add(o.StartIn)
	default:
		epoch = now()
	}
	return epoch.Round(0) // wall clock only
}

// shardSchedule is the whole run's schedule as loadgen plans it over the whole trace (whole):
// the passes (Repeat, at least 1), the rate scale (1 when unset), the length of one pass and
// the run's nominal end (Duration, else Repeat passes).
func shardSchedule(l loadgen.Options, whole loadgen.TraceShape) (repeat int, rate float64, period, runEnd time.Duration) {
	repeat = max(1, l.Repeat)
	rate = l.RateScale
	if rate == 0 {
		rate = 1
	}
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / rate) }
	period = metrics.ReplayLength(scale(whole.First), scale(whole.Last), whole.Len)
	runEnd = l.Duration
	if runEnd == 0 {
		runEnd = time.Duration(repeat) * period
	}
	return repeat, rate, period, runEnd
}

// shardConfig lists the settings that make two shards parts of one run.
func shardConfig(s *HTTPRun) map[string]string {
	i, l := s.Info, s.Load
	m := map[string]string{
		"endpoint": i.Endpoint, "backend": i.Backend, "api": i.API, "mode": i.Mode,
		"model":       l.Target.Model,
		"stream":      strconv.FormatBool(l.Target.Stream),
		"concurrency": strconv.Itoa(l.Concurrency), "max_concurrency": strconv.Itoa(l.MaxConcurrency),
		"rate_scale": strconv.FormatFloat(l.RateScale, 'g', -1, 64), "repeat": strconv.Itoa(l.Repeat),
		"duration": l.Duration.String(), "max_requests": strconv.Itoa(l.MaxRequests),
		"warmup": l.Warmup.String(), "cooldown": l.Cooldown.String(),
		"seed": strconv.FormatInt(l.Seed, 10), "tokenizer": i.Tokenizer,
		"time_scale": strconv.FormatFloat(s.TimeScale, 'g', -1, 64),
	}
	if l.Target.API == "embeddings" {
		m["batch_size"] = strconv.Itoa(max(l.Target.BatchSize, 1)) // shards batch alike
	}
	return m
}

// ReadShardFacts reads DIR/shard.json.
func ReadShardFacts(dir string) (*ShardFacts, error) {
	p := filepath.Join(dir, ShardFile)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("%s: no %s (is it the results directory of `llmbench run --shard`?)", dir, ShardFile)
	}
	return parseShardFacts(data, p)
}

// parseShardFacts decodes and checks a shard.json read from path.
func parseShardFacts(data []byte, p string) (*ShardFacts, error) {
	var f ShardFacts
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if f.Schema != ShardSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q", p, f.Schema, ShardSchema)
	}
	if f.Count < 1 || f.Index < 0 || f.Index >= f.Count || len(f.PerShard) != f.Count {
		return nil, fmt.Errorf("%s: shard %d/%d with %d shard sizes is inconsistent", p, f.Index, f.Count, len(f.PerShard))
	}
	if f.Repeat < 1 || !(f.RateScale > 0) || f.PeriodNs < 0 {
		return nil, fmt.Errorf("%s: repeat %d, rate_scale %g, period_ns %d: want >= 1, > 0, >= 0", p, f.Repeat, f.RateScale, f.PeriodNs)
	}
	if w := f.WholeTrace; w != nil && (w.Digest != f.TraceFingerprint || w.Requests != f.TraceRequests) {
		return nil, fmt.Errorf("%s: whole_trace_fingerprint (%d requests, digest %s) is not the trace_fingerprint %s of %d requests",
			p, w.Requests, safetext.Clip(w.Digest, 64), safetext.Clip(f.TraceFingerprint, 64), f.TraceRequests)
	}
	return &f, nil
}
