package engineadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
)

// Simulator turns the reference engine's ground-truth timelines into metrics.Records
// (refengine must not know about metrics). Its Produce method is a runner.Producer.
type Simulator struct {
	// Config is the engine to simulate.
	Config refengine.Config
	// RateScale multiplies the trace's arrival rate (offsets are divided by it); must be > 0.
	RateScale float64
	// Warmup and Cooldown mark the records intended in the first Warmup or the last Cooldown
	// of the run as excluded phases (metrics.PhaseOf, with the run's end one mean arrival gap
	// after the last arrival, as in loadgen); 0 marks none.
	Warmup, Cooldown time.Duration
	// Clock is the wall clock for the run's start (time.Now when nil); the run's times are on
	// the engine's virtual clock.
	Clock func() time.Time
	// KeepOutput keeps every request's output text and tool calls in its Record; without it
	// only requests with expect checks keep them (text is made only for those).
	KeepOutput bool
	// Replicas (> 1) simulates that many engines of Config behind Router (refengine.Routers;
	// "" is round-robin) and reports their load in the summary's cluster block; 0 or 1 is one
	// engine.
	Replicas int
	Router   string
}

func (a *Simulator) now() time.Time {
	if a.Clock != nil {
		return a.Clock()
	}
	return time.Now()
}

// SimRequests maps trace requests to the engine's simulated requests, arrivals divided by
// rateScale.
func SimRequests(reqs []traces.Request, rateScale float64) []refengine.SimRequest {
	return simRequests(reqs, rateScale, false)
}

func simRequests(reqs []traces.Request, rateScale float64, keepOutput bool) []refengine.SimRequest {
	out := make([]refengine.SimRequest, len(reqs))
	for i := range reqs {
		out[i] = simRequest(&reqs[i], rateScale, keepOutput)
	}
	return out
}

// SimRequest maps one trace request to the engine's simulated request, its arrival divided by
// rateScale.
func SimRequest(r *traces.Request, rateScale float64) refengine.SimRequest {
	return simRequest(r, rateScale, false)
}

// simRequest is SimRequest with the output kept for every request when keepOutput is set (else
// only for requests with expect checks). Images are added by addImages.
func simRequest(r *traces.Request, rateScale float64, keepOutput bool) refengine.SimRequest {
	sr := refengine.SimRequest{
		ID:           r.ID,
		Arrival:      time.Duration(float64(r.Arrival) / rateScale),
		PromptTokens: r.InputTokens,
		Prompt:       r.Prompt,
		HashIDs:      r.HashIDs,
		MaxTokens:    r.OutputTokens,
		MinTokens:    r.OutputTokens,
		IgnoreEOS:    true,
		Seed:         r.Seed,
		Class:        r.Class,
		Model:        r.Model, // per-request model (issue 38)
	}
	if len(r.Messages) > 0 && r.Prompt == "" {
		for _, m := range r.Messages {
			sr.Prompt += m.Content
		}
	}
	if r.Temperature != nil {
		sr.Temperature = *r.Temperature
	}
	// Quality (issue 17): the structured fields, the natural end, and the output text
	// only where someone grades or keeps it.
	sr.Tools, sr.ToolChoice, sr.ResponseFormat = r.Tools, r.ToolChoice, r.ResponseFormat
	if r.NaturalEnd() {
		sr.MinTokens, sr.IgnoreEOS = 0, false
		if len(r.Messages) > 0 {
			var b strings.Builder
			for _, m := range r.Messages {
				b.WriteString(m.Content)
				b.WriteByte('\n')
			}
			sr.AnswerText = b.String()
		}
	}
	sr.Output = keepOutput || len(r.Expect) > 0
	return sr
}

// Produce simulates the trace as it is read and hands every request's Record to sink in
// arrival order (trace order among equal arrivals), each as soon as it and every request
// before it have finished: memory holds the requests in flight (and finished ones waiting for
// an earlier one), not the trace. Reading the trace, simulating and making and writing the
// records run as three stages of a pipeline (see simulate_stream.go).
func (a *Simulator) Produce(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*runner.Produced, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n := trace.Stats().WithCancel; n > 0 {
		// Cancellations (issue 38): the engine frees an aborted request over HTTP; the
		// simulated timeline has no client to go away, and would show them as completed.
		return nil, fmt.Errorf("simulate: %d requests of the trace carry cancel_after_ms, which the simulation does not model; replay the trace with llmbench run (its embedded engine sees each cancel as the client going away), or remove the field (docs/cancellations.md)", n)
	}
	// The run's nominal end is the one loadgen uses for the same trace at the same rate.
	first, last := trace.Span()
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / a.RateScale) }
	end := metrics.ReplayLength(scale(first), scale(last), trace.Len())
	watch := newQueueWatch(scale(first), scale(last), trace.Len())
	if trace.Stats().Sessions > 0 || a.Replicas > 1 {
		p, err := a.produceHeld(trace, end, watch, sink)
		return withOverload(p, watch), err
	}
	toRecord := func(f *finished) *metrics.Record {
		watch.observe(f.tl)
		rec := TimelineRecord(f.tl, &f.req)
		if f.out != nil {
			setOutput(rec, f.out)
		}
		rec.Phase = metrics.PhaseOf(time.Duration(rec.Intended), a.Warmup, a.Cooldown, end)
		return rec
	}
	p := &pipeline{rateScale: a.RateScale, keepOutput: a.KeepOutput, images: imageFiles{}, models: newModelCheck(a.Config)}
	st, info, n, err := p.run(ctx, trace, a.Config, toRecord, sink)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	if n != trace.Len() {
		return nil, fmt.Errorf("simulate: %d of the trace's %d requests have a record", n, trace.Len())
	}
	return withOverload(&runner.Produced{Start: a.now(), Model: info.ServedModelName, Engine: loraFacts(describeInfo(info), st), Duration: st.Makespan,
		Energy: modelledEnergy(st)}, watch), nil
}

// withOverload adds the watch's overload warning, if any, to p's warnings.
func withOverload(p *runner.Produced, watch *queueWatch) *runner.Produced {
	if w := watch.warning(); p != nil && w != "" {
		p.Warnings = append(p.Warnings, w)
	}
	return p
}

// produceHeld simulates a trace that the streaming pipeline cannot: one whose sessions release
// turns as earlier turns finish (simulate_sessions.go), or a cluster of replicas
// (refengine.SimulateCluster). Both hold the whole trace.
func (a *Simulator) produceHeld(trace traces.Source, end time.Duration, watch *queueWatch, sink func(*metrics.Record)) (*runner.Produced, error) {
	reqs, err := trace.Requests()
	if err != nil {
		return nil, err
	}
	if err := newModelCheck(a.Config).checkAll(reqs); err != nil { // per-request model (issue 38)
		return nil, fmt.Errorf("simulate: %w", err)
	}
	if hasSessions(reqs) {
		if a.Replicas > 1 {
			return nil, fmt.Errorf("simulate: --replicas %d: this trace's sessions release their turns as earlier turns finish, which the cluster simulation does not follow; simulate it on one engine, or replay it with run against a cluster", a.Replicas)
		}
		// Session turns are released when their dependencies finish (simulate_sessions.go).
		st, info, err := a.produceSessions(reqs, end, watch, sink)
		if err != nil {
			return nil, fmt.Errorf("simulate: %w", err)
		}
		return &runner.Produced{Start: a.now(), Model: info.ServedModelName, Engine: loraFacts(describeInfo(info), st), Duration: st.Makespan,
			Energy: modelledEnergy(st)}, nil
	}
	sims := simRequests(reqs, a.RateScale, a.KeepOutput)
	if err := addImages(sims, reqs); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	res, err := refengine.SimulateCluster(sims, a.Config, refengine.ClusterOptions{Replicas: a.Replicas, Router: a.Router})
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	for i := range res.Timelines {
		watch.observe(&res.Timelines[i])
		rec := TimelineRecord(&res.Timelines[i], &reqs[i])
		if res.Outputs != nil {
			setOutput(rec, &res.Outputs[i])
		}
		rec.Phase = metrics.PhaseOf(time.Duration(rec.Intended), a.Warmup, a.Cooldown, end)
		sink(rec)
	}
	p := &runner.Produced{Start: a.now(), Model: res.Info.ServedModelName, Engine: loraFacts(describeInfo(res.Info), res.Stats), Duration: res.Stats.Makespan,
		Energy: modelledEnergy(res.Stats)}
	if a.Replicas > 1 {
		p.Cluster = ClusterLoad(res)
		if p.Engine == nil {
			p.Engine = map[string]string{}
		}
		p.Engine["replicas"] = fmt.Sprint(len(res.Replicas))
		p.Engine["router"] = res.Router
	}
	return p, nil
}

// ClusterLoad is the summary's cluster block of a cluster simulation.
func ClusterLoad(res *refengine.ClusterResult) *metrics.Cluster {
	c := &metrics.Cluster{Router: res.Router, Replicas: make([]metrics.ReplicaLoad, len(res.Replicas))}
	for k, rs := range res.Replicas {
		l := metrics.ReplicaLoad{Requests: rs.Requests, InputTokens: rs.PromptTokens, OutputTokens: rs.OutputTokens, Preemptions: rs.Preemptions}
		if rs.PrefixQueries > 0 {
			l.PrefixHitRate = float64(rs.PrefixHits) / float64(rs.PrefixQueries)
		}
		if res.Stats.Makespan > 0 {
			l.BusyFraction = float64(rs.BusyTime) / float64(res.Stats.Makespan)
		}
		c.Replicas[k] = l
	}
	return c
}

// TimelineRecord converts one ground-truth timeline. Intended, dispatched and sent are the
// arrival (a simulated client has no lag or queue); every chunk is one emission.
func TimelineRecord(t *refengine.Timeline, req *traces.Request) *metrics.Record {
	rec := &metrics.Record{}
	FillRecord(rec, t, req)
	return rec
}

// FillRecord is TimelineRecord into rec, whose Chunks' storage it reuses (a search that judges
// many simulated requests one at a time allocates no record per request).
func FillRecord(rec *metrics.Record, t *refengine.Timeline, req *traces.Request) {
	chunks := rec.Chunks[:0]
	if cap(chunks) < len(t.Emissions) {
		chunks = make([]metrics.Chunk, 0, len(t.Emissions))
	}
	*rec = metrics.Record{
		ID: req.ID, Class: req.Class, Session: req.Session, Turn: req.Turn, Model: req.Model,
		Intended: int64(t.Arrival), Dispatched: int64(t.Arrival), Sent: int64(t.Arrival), Headers: int64(t.Arrival),
		InputTokens: t.PromptTokens, InputSource: metrics.InputFromUsage, OutputTokens: t.OutputTokens, TokenSource: metrics.TokensFromUsage,
		RequestedTokens: req.OutputTokens, ServerInputTokens: t.PromptTokens, ServerOutputTokens: t.OutputTokens,
		Status: 200,
	}
	if t.FirstScheduled >= 0 { // the engine's own prefix-cache hits, as its usage reports them
		rec.CachedInputTokens, rec.CacheSource = t.CachedTokens, metrics.CacheFromEngine
	}
	rec.Chunks = chunks
	for _, e := range t.Emissions {
		rec.Chunks = append(rec.Chunks, metrics.Chunk{T: int64(e.At), Tokens: int32(e.Tokens)})
	}
	if len(rec.Chunks) > 0 {
		rec.FirstToken = rec.Chunks[0].T
	}
	rec.End = int64(t.Finish)
	switch {
	case !t.Done || t.Finish < 0:
		rec.Failure, rec.Error = metrics.FailCanceled, "simulation ended before the request finished"
		rec.End = 0
	case t.OutputTokens == 0:
		rec.Failure = metrics.FailEmpty
	case t.OutputTokens < req.OutputTokens && !req.NaturalEnd():
		rec.Failure = metrics.FailShortOutput
		rec.Error = fmt.Sprintf("engine finished (%s) after %d of %d tokens", t.FinishReason, t.OutputTokens, req.OutputTokens)
	}
}

// setOutput fills the record's output text and tool calls (bounded as loadgen bounds them).
func setOutput(rec *metrics.Record, o *refengine.Output) {
	rec.OutputText = metrics.TruncateOutput(o.Content)
	for _, c := range o.ToolCalls {
		rec.ToolCalls = append(rec.ToolCalls, metrics.ToolCall{ID: c.ID, Name: c.Name, Arguments: metrics.TruncateOutput(c.Arguments)})
	}
}

// describeInfo flattens the engine's configuration into strings for run facts.
func describeInfo(info refengine.Info) map[string]string {
	b, err := json.Marshal(info)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// loraFacts adds a simulation's adapter counters to its engine facts (issue 38): loads into a
// slot, evictions and the load time, when the engine served adapters.
func loraFacts(engine map[string]string, st refengine.SimStats) map[string]string {
	if engine == nil || engine["lora_modules"] == "" {
		return engine
	}
	engine["lora_loads"] = fmt.Sprint(st.LoRALoads)
	engine["lora_evictions"] = fmt.Sprint(st.LoRAEvictions)
	engine["lora_load_s"] = fmt.Sprintf("%.3f", st.LoRALoadTime.Seconds())
	return engine
}
