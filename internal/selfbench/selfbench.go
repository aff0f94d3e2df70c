// Package selfbench measures llmbench's own load generator, so that users can check that the
// harness is never the bottleneck of their runs: the open-loop dispatch rate it sustains with
// sub-millisecond schedule lag, the streamed tokens it parses and timestamps per second on one
// core, and how far its token arrival times are from a server's own send times with 1,000
// concurrent streams.
//
// It starts a minimal streaming server of its own on 127.0.0.1 (pre-rendered responses, no
// model) in the same process and drives it with package loadgen. It must not import the
// reference engine, write files or read the environment; the caller supplies machine facts.
package selfbench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// Targets are the figures issue 8 asks of the harness on a 2-core machine.
var Targets = map[string]float64{
	"dispatch_req_per_s":   5000,
	"ingest_tokens_per_s":  200000,
	"arrival_error_p99_ms": 1,
}

// Options bound the measurements. Zero values take the defaults in brackets.
type Options struct {
	// Runs is how often each measurement is repeated; the median is reported [3].
	Runs int
	// DispatchStep is the length of each rate step of the dispatch test [500ms].
	DispatchStep time.Duration
	// DispatchStart is the first rate tried (req/s); the rate doubles until a step misses
	// twice in a row (lag P99 at or above LagLimit, or a failed request), then bisects three
	// times [1000].
	DispatchStart float64
	// DispatchMax stops the doubling [64000].
	DispatchMax float64
	// LagLimit is the schedule-lag P99 a dispatch rate must stay under [1ms].
	LagLimit time.Duration
	// IngestTokens is the length of the stream of the ingest test [1,000,000].
	IngestTokens int
	// Streams, StreamTokens and TokenGap shape the arrival test: that many concurrent streams
	// of that many tokens, one token per gap [1000, 60, 50ms]. 1,000 streams at 50 ms are
	// 20,000 tokens/s, what an engine decoding a batch of 1,000 in 50 ms steps emits.
	Streams      int
	StreamTokens int
	TokenGap     time.Duration
	// Log receives one line per step (nil: none).
	Log io.Writer
}

func (o *Options) defaults() {
	if o.Runs <= 0 {
		o.Runs = 3
	}
	if o.DispatchStep <= 0 {
		o.DispatchStep = 500 * time.Millisecond
	}
	if o.DispatchStart <= 0 {
		o.DispatchStart = 1000
	}
	if o.DispatchMax <= 0 {
		o.DispatchMax = 64000
	}
	if o.LagLimit <= 0 {
		o.LagLimit = time.Millisecond
	}
	if o.IngestTokens <= 0 {
		o.IngestTokens = 1_000_000
	}
	if o.Streams <= 0 {
		o.Streams = 1000
	}
	if o.StreamTokens <= 0 {
		o.StreamTokens = 60
	}
	if o.TokenGap <= 0 {
		o.TokenGap = 50 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// Figures are the measured results: medians over the runs, with every run's value kept so
// that the noise is visible.
type Figures struct {
	// DispatchReqPerS is the highest open-loop dispatch rate of short streamed requests whose
	// schedule lag P99 stayed under the limit, as measured (requests over dispatch span).
	DispatchReqPerS float64 `json:"dispatch_req_per_s"`
	// DispatchLagP99Ms is the lag P99 at that rate.
	DispatchLagP99Ms float64 `json:"dispatch_lag_p99_ms"`
	// IngestTokensPerS is streamed tokens (one per chunk) parsed, timestamped and counted
	// per second by one request's reader goroutine: one core.
	IngestTokensPerS float64 `json:"ingest_tokens_per_s"`
	// ArrivalErrorP50Ms / P99Ms / MaxMs are client arrival time minus the server's send
	// time, over every token sent while all the concurrent streams were open (the ramp, when
	// the client is also opening connections, is left out).
	ArrivalErrorP50Ms float64 `json:"arrival_error_p50_ms"`
	ArrivalErrorP99Ms float64 `json:"arrival_error_p99_ms"`
	ArrivalErrorMaxMs float64 `json:"arrival_error_max_ms"`
	// ClientCPUFraction is the process's CPU use over wall time × CPUs during the
	// arrival test. It includes the built-in server, so it overstates the client's share.
	ClientCPUFraction float64 `json:"client_cpu_fraction"`
	// Runs holds each run's figures, in order.
	Runs RunFigures `json:"runs"`
	// Settings echo the options used.
	Settings Settings `json:"settings"`
	// Targets and MeetsTargets compare the medians with Targets.
	Targets      map[string]float64 `json:"targets"`
	MeetsTargets map[string]bool    `json:"meets_targets"`
	ElapsedS     float64            `json:"elapsed_s"`
	// Machine facts, filled by the caller. LoadAverage is the 1-minute load average before
	// and after the measurements (-1: unknown); above Cores, other processes competed for the
	// CPUs and the timing figures reflect that contention.
	CPUModel    string     `json:"cpu_model"`
	Cores       int        `json:"cores"`
	GOMAXPROCS  int        `json:"gomaxprocs"`
	GoVersion   string     `json:"go_version"`
	LoadAverage [2]float64 `json:"load_average_1m"`
	// CPUStealFraction is the share of the machine's CPU time the hypervisor gave to others
	// during the measurements (-1: unknown); filled by the caller.
	CPUStealFraction float64 `json:"cpu_steal_fraction"`
}

// RunFigures are the per-run values behind each median.
type RunFigures struct {
	DispatchReqPerS   []float64 `json:"dispatch_req_per_s"`
	IngestTokensPerS  []float64 `json:"ingest_tokens_per_s"`
	ArrivalErrorP99Ms []float64 `json:"arrival_error_p99_ms"`
	ClientCPUFraction []float64 `json:"client_cpu_fraction"`
}

// Settings record the shape of the measurements.
type Settings struct {
	Runs           int     `json:"runs"`
	DispatchStepMs float64 `json:"dispatch_step_ms"`
	LagLimitMs     float64 `json:"lag_limit_ms"`
	IngestTokens   int     `json:"ingest_tokens"`
	Streams        int     `json:"streams"`
	StreamTokens   int     `json:"stream_tokens"`
	TokenGapMs     float64 `json:"token_gap_ms"`
}

// Run performs every measurement Runs times against a server of its own and returns the
// medians. It stops early with ctx's error when ctx is canceled.
func Run(ctx context.Context, o Options) (*Figures, error) {
	o.defaults()
	t0 := time.Now()
	srv, err := startServer()
	if err != nil {
		return nil, err
	}
	defer srv.close()
	f := &Figures{Targets: Targets, Settings: Settings{
		Runs: o.Runs, DispatchStepMs: ms(o.DispatchStep), LagLimitMs: ms(o.LagLimit), IngestTokens: o.IngestTokens,
		Streams: o.Streams, StreamTokens: o.StreamTokens, TokenGapMs: ms(o.TokenGap),
	}}
	var lags []float64
	for run := range o.Runs {
		rate, lag, err := dispatchTest(ctx, srv, o)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Log, "run %d: dispatch %.0f req/s with lag P99 %.3f ms\n", run+1, rate, lag)
		f.Runs.DispatchReqPerS = append(f.Runs.DispatchReqPerS, rate)
		lags = append(lags, lag)

		tps, err := ingestTest(ctx, srv, o)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Log, "run %d: ingest %.0f tokens/s\n", run+1, tps)
		f.Runs.IngestTokensPerS = append(f.Runs.IngestTokensPerS, tps)

		a, err := arrivalTest(ctx, srv, o)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Log, "run %d: arrival error P50 %.3f P99 %.3f max %.3f ms, CPU %.2f\n", run+1, a.p50, a.p99, a.max, a.cpu)
		f.Runs.ArrivalErrorP99Ms = append(f.Runs.ArrivalErrorP99Ms, a.p99)
		f.Runs.ClientCPUFraction = append(f.Runs.ClientCPUFraction, a.cpu)
		f.ArrivalErrorP50Ms = max(f.ArrivalErrorP50Ms, a.p50)
		f.ArrivalErrorMaxMs = max(f.ArrivalErrorMaxMs, a.max)
	}
	f.DispatchReqPerS = median(f.Runs.DispatchReqPerS)
	f.DispatchLagP99Ms = median(lags)
	f.IngestTokensPerS = median(f.Runs.IngestTokensPerS)
	f.ArrivalErrorP99Ms = median(f.Runs.ArrivalErrorP99Ms)
	f.ClientCPUFraction = median(f.Runs.ClientCPUFraction)
	f.MeetsTargets = map[string]bool{
		"dispatch_req_per_s":   f.DispatchReqPerS >= Targets["dispatch_req_per_s"],
		"ingest_tokens_per_s":  f.IngestTokensPerS >= Targets["ingest_tokens_per_s"],
		"arrival_error_p99_ms": f.ArrivalErrorP99Ms <= Targets["arrival_error_p99_ms"],
	}
	f.ElapsedS = time.Since(t0).Seconds()
	return f, nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// quantile of sorted values, q in [0,1].
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i]
}

func target(srv *server, mode string, extra map[string]string) loadgen.Target {
	h := map[string]string{modeHeader: mode}
	for k, v := range extra {
		h[k] = v
	}
	return loadgen.Target{URL: srv.url, Model: "bench", Backend: "openai", Stream: true, Headers: h,
		Timeouts: loadgen.Timeouts{Connect: 10 * time.Second, Headers: 10 * time.Second, Idle: 10 * time.Second}}
}

// dispatchStep replays rate req/s of 4-token streams for step and returns the measured
// dispatch rate, the lag P99 (ms) and whether every request succeeded.
func dispatchStep(ctx context.Context, srv *server, o Options, rate float64) (float64, float64, bool, error) {
	n := max(int(rate*o.DispatchStep.Seconds()), 2)
	reqs := make([]traces.Request, n)
	for i := range reqs {
		reqs[i] = traces.Request{ID: strconv.Itoa(i), Arrival: time.Duration(float64(i) / rate * 1e9), InputTokens: 1, OutputTokens: 4, Prompt: " hi"}
	}
	var mu sync.Mutex
	lags := make([]float64, 0, n)
	var first, last int64 = -1, 0
	failed := 0
	res, err := loadgen.Run(ctx, reqs, loadgen.Options{Target: target(srv, "short", nil)}, func(r *metrics.Record) {
		mu.Lock()
		defer mu.Unlock()
		if !r.OK() {
			failed++
			return
		}
		lags = append(lags, ms(time.Duration(r.Dispatched-r.Intended)))
		if first < 0 || r.Dispatched < first {
			first = r.Dispatched
		}
		last = max(last, r.Dispatched)
	})
	if err != nil {
		return 0, 0, false, err
	}
	if res.Interrupted {
		return 0, 0, false, ctx.Err()
	}
	slices.Sort(lags)
	p99 := quantile(lags, 0.99)
	measured := 0.0
	if last > first {
		measured = float64(len(lags)-1) / time.Duration(last-first).Seconds()
	}
	ok := failed == 0 && p99 < ms(o.LagLimit)
	fmt.Fprintf(o.Log, "  dispatch step %.0f req/s: measured %.0f, lag P99 %.3f ms, %d failed\n", rate, measured, p99, failed)
	return measured, p99, ok, nil
}

// tryStep runs a dispatch step and, when it misses, once more: one stall of a shared machine
// should not end the ramp, two in a row should.
func tryStep(ctx context.Context, srv *server, o Options, rate float64) (float64, float64, bool, error) {
	m, lag, ok, err := dispatchStep(ctx, srv, o, rate)
	if err != nil || ok {
		return m, lag, ok, err
	}
	return dispatchStep(ctx, srv, o, rate)
}

// dispatchTest doubles the rate until a step fails (twice), then bisects, and returns the
// best passing step's measured rate and lag.
func dispatchTest(ctx context.Context, srv *server, o Options) (float64, float64, error) {
	bestRate, bestLag := 0.0, 0.0
	pass, fail := 0.0, 0.0
	for rate := o.DispatchStart; rate <= o.DispatchMax; rate *= 2 {
		m, lag, ok, err := tryStep(ctx, srv, o, rate)
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			fail = rate
			break
		}
		pass, bestRate, bestLag = rate, m, lag
	}
	// Below the start rate when even that fails, halving down to 1/16 of it.
	for rate := o.DispatchStart / 2; pass == 0 && rate >= o.DispatchStart/16; rate /= 2 {
		m, lag, ok, err := tryStep(ctx, srv, o, rate)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			pass, bestRate, bestLag = rate, m, lag
		} else {
			fail = rate
		}
	}
	for i := 0; i < 3 && fail > 0 && pass > 0; i++ {
		rate := (pass + fail) / 2
		m, lag, ok, err := tryStep(ctx, srv, o, rate)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			pass = rate
			if m > bestRate {
				bestRate, bestLag = m, lag
			}
		} else {
			fail = rate
		}
	}
	return bestRate, bestLag, nil
}

// ingestTest streams IngestTokens one-token chunks as fast as loopback carries them to a
// single request, counted with the reference tokenizer, and returns tokens per second from
// the first token to the end.
func ingestTest(ctx context.Context, srv *server, o Options) (float64, error) {
	req := []traces.Request{{ID: "ingest", InputTokens: 1, OutputTokens: o.IngestTokens, Prompt: " hi"}}
	var rate float64
	var failure string
	res, err := loadgen.Run(ctx, req, loadgen.Options{
		Target:    target(srv, "ingest", map[string]string{tokensHeader: strconv.Itoa(o.IngestTokens)}),
		Tokenizer: tokenizer.Reference{},
	}, func(r *metrics.Record) {
		if !r.OK() {
			failure = fmt.Sprintf("%s: %s", r.Failure, r.Error)
			return
		}
		if d := time.Duration(r.End - r.FirstToken); d > 0 {
			rate = float64(r.OutputTokens) / d.Seconds()
		}
	})
	if err != nil {
		return 0, err
	}
	if res.Interrupted {
		return 0, ctx.Err()
	}
	if failure != "" {
		return 0, fmt.Errorf("ingest test: the stream failed: %s", failure)
	}
	return rate, nil
}

type arrival struct{ p50, p99, max, cpu float64 }

// arrivalTest runs Streams concurrent streams (started over the first 4×TokenGap) whose
// tokens the server sends TokenGap apart, and compares the client arrival time of every token
// sent while all streams were open with the server's send time.
func arrivalTest(ctx context.Context, srv *server, o Options) (arrival, error) {
	reqs := make([]traces.Request, o.Streams)
	ramp := 4 * o.TokenGap
	for i := range reqs {
		reqs[i] = traces.Request{ID: "s" + strconv.Itoa(i), Arrival: ramp * time.Duration(i) / time.Duration(o.Streams), InputTokens: 1, OutputTokens: o.StreamTokens, Prompt: " hi"}
	}
	var mu sync.Mutex
	got := make(map[string][]int64, o.Streams)
	failed := 0
	var failure string
	srv.emitted.take()
	res, err := loadgen.Run(ctx, reqs, loadgen.Options{
		Target: target(srv, "timed", map[string]string{tokensHeader: strconv.Itoa(o.StreamTokens), gapHeader: o.TokenGap.String()}),
	}, func(r *metrics.Record) {
		mu.Lock()
		defer mu.Unlock()
		if !r.OK() {
			failed++
			failure = fmt.Sprintf("%s: %s", r.Failure, r.Error)
			return
		}
		ts := make([]int64, len(r.Chunks))
		for i, c := range r.Chunks {
			ts[i] = c.T
		}
		got[r.ID] = ts
	})
	if err != nil {
		return arrival{}, err
	}
	if res.Interrupted {
		return arrival{}, ctx.Err()
	}
	if failed > 0 {
		return arrival{}, fmt.Errorf("arrival test: %d of %d streams failed, e.g. %s", failed, o.Streams, failure)
	}
	emitted := srv.emitted.take()
	offset := res.Start.Sub(srv.epoch).Nanoseconds()
	// Only tokens sent while every stream was open count: during the ramp the client is
	// also dialing up to a thousand connections, which is connection setup, not streaming.
	var allOpen int64
	for _, sent := range emitted {
		if len(sent) > 0 {
			allOpen = max(allOpen, sent[0])
		}
	}
	errs := make([]float64, 0, o.Streams*o.StreamTokens)
	for id, client := range got {
		sent := emitted[id]
		if len(sent) != len(client) {
			return arrival{}, fmt.Errorf("arrival test: stream %s: server sent %d tokens, client saw %d chunks", id, len(sent), len(client))
		}
		for i := range client {
			if sent[i] > allOpen {
				errs = append(errs, ms(time.Duration(client[i]+offset-sent[i])))
			}
		}
	}
	if len(errs) == 0 {
		return arrival{}, fmt.Errorf("arrival test: no token was sent while all %d streams were open; give more --stream-tokens", o.Streams)
	}
	slices.Sort(errs)
	return arrival{p50: quantile(errs, 0.5), p99: quantile(errs, 0.99), max: quantile(errs, 1), cpu: res.ClientCPUFraction}, nil
}
