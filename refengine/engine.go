package refengine

import (
	"context"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmbench/llmbench/tokenizer"
)

// Engine is a running reference engine: a scheduler goroutine on a clock plus the HTTP
// handlers that feed it. Create one with New, serve Handler, and Close it when done.
type Engine struct {
	cfg   *resolved
	clock Clock
	scale float64
	seed  uint64

	mu        sync.Mutex // guards cl, incoming, timelines, hist, interrupt
	cl        *cluster
	interrupt context.CancelFunc // cancels the scheduler's sleep when an idle pool could start
	incoming  []*seq
	timelines *timelineStore
	hist      *histograms

	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	counter  atomic.Uint64
	inflight atomic.Int64
	panics   atomic.Int64
	limiter  *rateLimiter

	maxLag time.Duration // longest the scheduler has run behind its clock (simulated time)

	wire *personality // how streamed responses are framed
	errs *errorModel  // the answers' error model (Config.Quality)

	faultMu sync.Mutex
	faults  map[string]int64

	// Cancellations (issue 38): requests aborted before the scheduler took them (still in
	// incoming when the client went away); the scheduler's Stats.AbortedRequests count the rest.
	abortedIncoming int64 // guarded by mu
}

// New builds an engine from cfg and starts its scheduler. The error names the config field at
// fault.
func New(cfg Config) (*Engine, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: r, wake: make(chan struct{}, 1), done: make(chan struct{})}
	e.clock = r.Clock
	e.scale = 1
	if e.clock == nil {
		sc := NewScaledClock(r.Now, r.TimeScale)
		e.clock, e.scale = sc, sc.Scale()
	}
	e.wire, _ = personalityFor(r.Wire) // validated by resolve
	e.seed = r.Seed
	if e.seed == 0 {
		e.seed = tokenizer.Mix(uint64(r.Now().UnixNano()))
	}
	e.errs = newErrorModel(r.Quality, r.WeightDtype, e.seed)
	e.hist = newHistograms()
	e.cl = r.newCluster(e.hist, true)
	e.cl.noise = newNoiser(r.Noise, e.seed)
	e.timelines = newTimelineStore(r.TimelineCapacity)
	if r.RateLimit > 0 {
		e.limiter = newRateLimiter(r.RateLimit, r.Now)
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	go e.loop()
	return e, nil
}

// Close stops the scheduler; requests in flight end (their streams are cut). It is safe to
// call more than once.
func (e *Engine) Close() {
	e.cancel()
	<-e.done
}

// MaxLag is the longest the scheduler has run behind its clock, in simulated time: how late
// (times 1/TimeScale in wall time) tokens were sent after their ground-truth emission at worst.
// A lag near the step time means the CPU could not keep up with the time scale.
func (e *Engine) MaxLag() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.maxLag
}

// ServedModelName is the model name the engine answers to.
func (e *Engine) ServedModelName() string { return e.cfg.ServedModelName }

// Timeline returns a copy of the ground-truth timeline of the request with key id (its
// X-Request-Id header, else its response id), in flight or among the last TimelineCapacity
// finished ones.
func (e *Engine) Timeline(id string) (Timeline, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.timelines.get(id)
	if !ok {
		return Timeline{}, false
	}
	return t.clone(), true
}

// loop is the scheduler goroutine. Simulated time follows the ideal schedule: a step that
// starts at t ends at t + its priced duration, whatever the OS timer's precision, and the
// clock only paces the loop (it sleeps until the wall time of the next event, and runs
// overdue events back to back). Tokens are therefore never delivered before their
// ground-truth time, and late by at most the timer's granularity. When nothing is pending the
// engine's time catches up with the clock; a request is admitted once the engine's time has
// reached its arrival.
func (e *Engine) loop() {
	defer close(e.done)
	cl := e.cl
	for {
		e.mu.Lock()
		if !cl.busy() {
			cl.now = max(cl.now, e.clock.Now())
		}
		cl.advance()
		j := 0
		var nextArrival time.Duration
		for _, s := range e.incoming {
			if s.tl.Arrival <= cl.now {
				cl.submit(s)
				continue
			}
			if j == 0 || s.tl.Arrival < nextArrival {
				nextArrival = s.tl.Arrival
			}
			e.incoming[j] = s
			j++
		}
		clear(e.incoming[j:])
		e.incoming = e.incoming[:j]
		cl.planIdle()
		e.noteFinished()
		next, ok := cl.nextEvent()
		if j > 0 && (!ok || nextArrival < next) {
			next, ok = nextArrival, true
		}
		ctx, cancel := e.ctx, context.CancelFunc(nil)
		if ok && cl.anyIdle() {
			// A new arrival may start an idle pool before next: let submit interrupt the sleep.
			ctx, cancel = context.WithCancel(e.ctx)
			e.interrupt = cancel
		}
		e.mu.Unlock()
		if !ok {
			select {
			case <-e.wake:
				continue
			case <-e.ctx.Done():
				return
			}
		}
		reached := e.clock.SleepUntil(ctx, next) == nil
		e.mu.Lock()
		e.interrupt = nil
		if reached {
			cl.now = max(cl.now, next)
			e.maxLag = max(e.maxLag, e.clock.Now()-next)
		}
		e.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		if e.ctx.Err() != nil {
			return
		}
	}
}

// noteFinished moves timelines of finished requests into the bounded store's history.
func (e *Engine) noteFinished() {
	e.cl.drainDone(func(s *seq) { e.timelines.finished(s.tl) })
}

// newID returns a response id with the given prefix ("cmpl-", "chatcmpl-").
func (e *Engine) newID(prefix string, n uint64) string {
	var b [16]byte
	x, y := tokenizer.Mix(e.seed^n), tokenizer.Mix(e.seed^^n)
	for i := 0; i < 8; i++ {
		b[i], b[8+i] = byte(x>>(8*i)), byte(y>>(8*i))
	}
	return prefix + hex.EncodeToString(b[:])
}

// submit queues r under key and returns its sequence; sink receives its tokens.
func (e *Engine) submit(r *request, key, respID string, out *outPlan, plan *faultPlan, sink emitSink) *seq {
	if out == nil {
		out = &outPlan{}
	}
	base := out.base
	tl := &Timeline{OutputSeed: base,
		ID: key, ResponseID: respID, Epoch: e.clock.Wall(0), Scale: e.scale,
		FirstScheduled: -1, Finish: -1, PromptTokens: r.promptTokens, MaxTokens: r.maxTokens,
	}
	target := out.target(r.maxTokens, r.minTokens, r.ignoreEOS, plan.target(r.maxTokens, r.minTokens, r.ignoreEOS))
	tl.Emissions = make([]Emission, 0, min(target, 4096))
	s := &seq{tl: tl, promptTokens: r.promptTokens, encodeTokens: r.imageTokens, target: target, sink: sink, lora: r.lora}
	if !e.cfg.DisablePrefixCaching {
		s.hashes = blockHashes(r.promptIDs, r.hashIDs, r.promptTokens, e.cfg.BlockSize, e.cfg.HashIDTokens, r.promptHash)
	}
	seed := r.promptHash
	if r.seed != nil {
		seed = uint64(*r.seed)
	}
	s.rng = tokenizer.Mix(seed ^ 0x5eed5eed5eed5eed)
	s.rho = e.cfg.repetitionFor("") // the wire carries no request class
	e.mu.Lock()
	tl.Arrival = e.clock.Now()
	e.timelines.add(tl)
	e.incoming = append(e.incoming, s)
	if e.interrupt != nil {
		e.interrupt()
		e.interrupt = nil
	}
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return s
}

// abort removes s from the scheduler (client gone or stream cut).
func (e *Engine) abort(s *seq) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.state == stFinished {
		return
	}
	for i, in := range e.incoming {
		if in == s {
			e.incoming = append(e.incoming[:i], e.incoming[i+1:]...)
			s.state = stFinished
			s.tl.Finish, s.tl.FinishReason, s.tl.Done = e.clock.Now(), "abort", true
			e.timelines.finished(s.tl)
			e.abortedIncoming++
			return
		}
	}
	// A waiting request ends now; a running one when the scheduler drops it before its next
	// step.
	e.cl.abort(s)
	e.noteFinished()
}

// waitingLen is the number of requests queued and not yet running.
func (e *Engine) waitingLen() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cl.waiting() + len(e.incoming)
}

// blockHashes returns the chained hashes of the full prompt blocks. Block b's content comes
// from the hash_ids entries covering its tokens (hashTokens tokens per entry) when there are
// such entries, else from its token ids, else (a token count only) from a value unique to the
// prompt. Chaining makes a block's hash depend on every block before it, so hash ids identify
// blocks in their position after the same predecessors, as in the Mooncake traces.
func blockHashes(ids []int, hashIDs []int64, promptTokens, blockSize, hashTokens int, unique uint64) []uint64 {
	n := promptTokens / blockSize
	if n == 0 {
		return nil
	}
	out := make([]uint64, n)
	h := uint64(fnvOffset)
	for b := 0; b < n; b++ {
		var content uint64
		first, last := b*blockSize, (b+1)*blockSize-1
		switch {
		case hashTokens > 0 && last/hashTokens < len(hashIDs):
			i0, i1 := first/hashTokens, last/hashTokens
			content = tokenizer.Mix(tokenizer.Mix(uint64(hashIDs[i0])^0x6a09e667f3bcc908)^uint64(hashIDs[i1])) + uint64(b)
		case len(ids) >= (b+1)*blockSize:
			c := uint64(fnvOffset)
			for _, id := range ids[b*blockSize : (b+1)*blockSize] {
				c = (c ^ uint64(id)) * fnvPrime
			}
			content = c
		default:
			content = tokenizer.Mix(unique ^ tokenizer.Mix(uint64(b)))
		}
		h = tokenizer.Mix(h ^ tokenizer.Mix(content))
		if h == 0 {
			h = 1
		}
		out[b] = h
	}
	return out
}

// rateLimiter is a token bucket over wall time.
type rateLimiter struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

func newRateLimiter(rate float64, now func() time.Time) *rateLimiter {
	b := max(1, rate)
	return &rateLimiter{rate: rate, burst: b, tokens: b, last: now(), now: now}
}

func (l *rateLimiter) allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.now()
	l.tokens = min(l.burst, l.tokens+t.Sub(l.last).Seconds()*l.rate)
	l.last = t
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}
