package loadgen

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmbench/llmbench/internal/hoststat"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

// item is one unit the scheduler dispatches: a single request, or a multi-turn session whose
// turns are sent one after another.
type item struct {
	turns    []*traces.Request // in Turn order; len 1 for a request outside a session
	one      [1]*traces.Request
	repeat   int
	intended time.Duration // the first turn's intended offset from the run start
	pos      int           // the position in the trace of the session's first request (ties)
	// Agentic sessions: deps[i] are the positions turn i waits for (traces.SessionDeps), set
	// only for a session whose turns do not simply follow one another (graph); lead is the turn
	// sent first, at intended (the earliest of those that wait for none).
	deps  [][]int
	graph bool
	lead  int
}

// runner holds one run's state.
type runner struct {
	opts     Options
	c        *client
	clock    Clock
	start    time.Time
	sink     func(*metrics.Record)
	soft     context.Context // canceled by the caller: stop sending
	hard     context.Context // canceled after the grace period: abort in-flight requests
	sem      chan struct{}
	waiting  chan struct{} // bounds dispatched requests not yet sent (Options.MaxWaiting)
	runEnd   time.Duration // for the cool-down phase
	recs     sync.Pool
	wg       sync.WaitGroup
	progress *Progress
	prompter *workloads.Prompter
	batches  *batchSource // embeddings batches (batch.go); nil otherwise
	sizer    *Sizer       // prompt sizing on the target (sizing.go); nil: opts.Tokenizer

	sent, succeeded, failed, dropped, skipped atomic.Int64
	cancelled                                 atomic.Int64 // metrics.KindCancelled (cancel.go)
}

// Run replays reqs against opts.Target and calls sink once per request with its Record. The
// sink may be called concurrently from many goroutines and must not keep the pointer (records
// are reused). Every request of the run yields exactly one Record: sent, or never sent because
// the run was interrupted (metrics.FailDropped), or canceled in flight when the grace period
// ended (metrics.FailCanceled). Requests outside Duration or MaxRequests get none (see
// Result.Skipped).
//
// Canceling ctx stops sending; requests in flight get opts.Grace to finish, and then are
// canceled. Run returns an error only when the run cannot start (bad options, model discovery
// failed); a failed request is a Record, never an error.
func Run(ctx context.Context, reqs []traces.Request, opts Options, sink func(*metrics.Record)) (*Result, error) {
	return RunSource(ctx, traces.FromSlice(reqs), opts, sink)
}

// RunSource is Run over a traces.Source: a trace file replayed as it is read (traces.OpenFile)
// holds in memory only the requests in flight and those of multi-turn sessions. If the trace
// cannot be read again during the run, sending stops there and Result.TraceErr says why.
func RunSource(ctx context.Context, src traces.Source, opts Options, sink func(*metrics.Record)) (*Result, error) {
	if err := validate(&opts); err != nil {
		return nil, err
	}
	c, err := newClient(opts.Target, opts.Dial)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if err := c.prepare(ctx, opts); err != nil {
		return nil, err
	}
	r, p, err := newRunner(ctx, src, opts, c, sink)
	if err != nil {
		return nil, err
	}
	hard, hardCancel := context.WithCancelCause(context.Background())
	defer hardCancel(nil)
	r.hard = hard
	finished := make(chan struct{})
	go r.abortAfterGrace(finished, hardCancel)

	mode := "open-loop"
	var pre *preparer
	if opts.Concurrency > 0 {
		mode = "closed-loop"
	} else {
		// The first requests are built before the epoch, so their prompts cost no lag.
		pre = r.startPreparer(p)
		defer pre.close()
		select {
		case <-pre.ready:
		case <-ctx.Done():
		}
	}
	cpu0, cpuOK := processCPU()
	steal := hoststat.Since()
	lateStart := r.startEpoch()
	if pre == nil {
		r.closedLoop(p)
	} else {
		r.openLoop(pre)
	}
	r.wg.Wait()
	if p.err == nil {
		// Every request the plan did not hand out is outside the run (Duration, MaxRequests).
		r.skipped.Add(int64(p.total - p.emitted))
	}
	end := r.clock.Now()
	close(finished)
	cpu1, _ := processCPU()

	res := r.result(end, mode, p.err)
	res.CPUStealFraction = steal()
	res.LateStart = lateStart
	if wall := end.Sub(r.start); cpuOK && wall > 0 {
		res.ClientCPUFraction = float64(cpu1-cpu0) / (float64(wall) * float64(CPUs))
	}
	return res, nil
}

// prepare sets c up for the run: the tokenizer, and the model, discovered on the target when
// opts names none. Interrupted while discovering, it returns no error: nothing will be sent,
// and the run records every request as dropped, so the results still account for the whole
// trace.
func (c *client) prepare(ctx context.Context, opts Options) error {
	c.tok = opts.Tokenizer
	c.model = opts.Target.Model
	if c.model != "" {
		return nil
	}
	var err error
	if c.model, err = c.discover(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// newRunner builds the run's state over c and its plan over src: the prompt sizing (measured
// on the target when opts asks for it), the embeddings batches, the clock, the prompter and the
// concurrency bounds.
func newRunner(ctx context.Context, src traces.Source, opts Options, c *client, sink func(*metrics.Record)) (*runner, *planner, error) {
	if sink == nil {
		sink = func(*metrics.Record) {}
	}
	sizer := opts.Sizer
	var err error
	if sizer == nil && opts.PromptSizing != "" && opts.PromptSizing != SizingTokenizer && ctx.Err() == nil {
		if sizer, err = c.measureSizing(ctx, opts.PromptSizing); err != nil && ctx.Err() == nil {
			return nil, nil, err
		}
	}
	var batches *batchSource
	if opts.Target.API == "embeddings" {
		if batches, err = newBatchSource(src, opts.Target.BatchSize); err != nil {
			return nil, nil, err
		}
		src = batches
	}
	clock := opts.Clock
	rc := (*realClock)(nil)
	if clock == nil {
		rc = newRealClock()
		clock = rc
	}
	r := &runner{opts: opts, c: c, clock: clock, sink: sink, soft: ctx, progress: opts.Progress,
		prompter: workloads.NewPrompter(opts.Tokenizer, opts.Seed, opts.PromptBlockTokens), batches: batches, sizer: sizer}
	if sizer.measured() {
		r.prompter = workloads.NewPrompterWords(sizer.costs, opts.Seed, opts.PromptBlockTokens, sizer.words)
	}
	if r.progress == nil {
		r.progress = &Progress{}
	}
	if rc != nil {
		// Over HTTP/2 the streams share few sockets; over HTTP/1.1 each is one, and past
		// pollerStreams of them a wake-up through the poller waits behind their reads.
		rc.poller = func() bool { return sleepViaPoller(opts.Target.HTTP2, r.progress.InFlight.Load()) }
	}
	p, err := r.newPlanner(src)
	if err != nil {
		return nil, nil, err
	}
	if opts.MaxConcurrency > 0 {
		r.sem = make(chan struct{}, opts.MaxConcurrency)
	}
	if opts.MaxWaiting > 0 {
		r.waiting = make(chan struct{}, opts.MaxWaiting)
	}
	return r, p, nil
}

// abortAfterGrace cancels the requests in flight (hardCancel) Options.Grace after the caller
// canceled the run, unless the run finishes first (finished closed).
func (r *runner) abortAfterGrace(finished <-chan struct{}, hardCancel context.CancelCauseFunc) {
	select {
	case <-finished:
		return
	case <-r.soft.Done():
	}
	if stoppedEarly(r.soft) {
		hardCancel(context.Cause(r.soft)) // stopped on purpose: no grace (stop.go)
		return
	}
	t := time.NewTimer(r.opts.Grace)
	defer t.Stop()
	select {
	case <-finished:
	case <-t.C:
		hardCancel(errInterrupted)
	}
}

// startEpoch sets the run's start (r.start, and the client's clock): now, or Options.StartAt,
// waited for. It returns how late the run was for StartAt (0 without one).
func (r *runner) startEpoch() (lateStart time.Duration) {
	clock, opts := r.clock, r.opts
	r.start = clock.Now()
	if !opts.StartAt.IsZero() {
		lateStart = max(0, clock.Now().Sub(opts.StartAt))
		_ = clock.SleepUntil(r.soft, opts.StartAt) // interrupted while waiting: all dropped
		now := clock.Now()
		r.start = now.Add(opts.StartAt.Sub(now)) // the agreed instant, with now's monotonic reading
	}
	r.c.clock, r.c.start = clock, r.start
	return lateStart
}

// result is the run's Result at end from its counters; the caller adds the host figures
// (CPU fraction, steal) and the late start.
func (r *runner) result(end time.Time, mode string, traceErr error) *Result {
	return &Result{
		Start:             r.start,
		Elapsed:           end.Sub(r.start),
		Model:             r.c.model,
		Sizer:             r.sizer,
		Mode:              mode,
		Sent:              int(r.sent.Load()),
		Succeeded:         int(r.succeeded.Load()),
		Failed:            int(r.failed.Load()),
		Dropped:           int(r.dropped.Load()),
		Cancelled:         int(r.cancelled.Load()),
		Skipped:           int(r.skipped.Load()),
		Interrupted:       r.soft.Err() != nil && !stoppedEarly(r.soft),
		ClientCPUFraction: -1,
		TraceErr:          traceErr,
		Connections:       int(r.c.conns.Load()),
	}
}

func validate(o *Options) error {
	switch {
	case o.Concurrency < 0:
		return fmt.Errorf("concurrency %d: must be >= 0", o.Concurrency)
	case o.MaxConcurrency < 0:
		return fmt.Errorf("max concurrency %d: must be >= 0", o.MaxConcurrency)
	case o.Concurrency > 0 && o.MaxConcurrency > 0:
		return errors.New("concurrency (closed loop) and max concurrency (open-loop cap) exclude each other; give one")
	case o.RateScale < 0:
		return fmt.Errorf("rate scale %g: must be > 0", o.RateScale)
	case o.Duration < 0 || o.Warmup < 0 || o.Cooldown < 0 || o.Grace < 0:
		return errors.New("duration, warmup, cooldown and grace must be >= 0")
	case o.Target.BatchSize < 0 || (o.Target.BatchSize > 1 && o.Target.API != "embeddings"):
		return fmt.Errorf("batch size %d: must be >= 0, and above 1 only with the embeddings API", o.Target.BatchSize)
	case o.MaxRequests < 0 || o.Repeat < 0 || o.PromptBlockTokens < 0:
		return errors.New("max requests, repeat and prompt block tokens must be >= 0")
	case checkSizing(o.PromptSizing) != nil:
		return checkSizing(o.PromptSizing)
	case o.Concurrency > 0 && o.Cooldown > 0 && o.Duration == 0:
		return errors.New("cooldown in a closed-loop run needs a duration: the end of the run is not known in advance")
	}
	if o.RateScale == 0 {
		o.RateScale = 1
	}
	if o.Repeat == 0 {
		o.Repeat = 1
	}
	if o.PromptBlockTokens == 0 {
		o.PromptBlockTokens = 512
	}
	if o.Grace == 0 {
		o.Grace = 10 * time.Second
	}
	if o.MaxWaiting == 0 {
		o.MaxWaiting = DefaultMaxWaiting
	}
	return nil
}

// planner hands out a run's items in dispatch order, reading the trace as it goes: it
// expands repeats, merges sessions (held in memory) with the requests outside sessions (read in
// arrival order), and applies Duration (open loop) and MaxRequests. The order is that of a
// stable sort of all items by intended time, ties in trace order.
type planner struct {
	src      traces.Source
	o        Options
	period   time.Duration // the length of one pass (Repeat)
	sessions []*item       // one pass's sessions at repeat 0, by (intended, pos)
	total    int           // requests in the replay (trace × Repeat)
	emitted  int           // requests handed out so far
	err      error         // the trace could not be read again
}

// errPlanStop ends a walk of the trace early.
var errPlanStop = errors.New("plan stopped")

func (r *runner) newPlanner(src traces.Source) (*planner, error) {
	o := r.opts
	p := &planner{src: src, o: o, total: src.Len() * o.Repeat}
	first, last := src.Span()
	n := src.Len()
	if o.Whole.Len > 0 {
		first, last, n = o.Whole.First, o.Whole.Last, o.Whole.Len
	}
	first, last = p.scale(first), p.scale(last)
	p.period = metrics.ReplayLength(first, last, n)
	byName := map[string]*item{}
	src.Sessions(func(pos int, q *traces.Request) {
		if it, ok := byName[q.Session]; ok {
			it.turns = append(it.turns, q)
			return
		}
		it := &item{turns: []*traces.Request{q}, pos: pos}
		byName[q.Session] = it
		p.sessions = append(p.sessions, it)
	})
	for _, it := range p.sessions {
		traces.SortTurns(it.turns)
		it.intended = p.scale(it.turns[0].Arrival)
		if err := p.sessionGraph(it); err != nil {
			return nil, err
		}
	}
	sort.Slice(p.sessions, func(a, b int) bool { return p.sessions[a].before(p.sessions[b].intended, p.sessions[b].pos) })
	// The run's nominal end: Duration, else the length of the replay (the trace's span plus
	// one mean gap, times Repeat).
	r.runEnd = o.Duration
	if r.runEnd == 0 {
		r.runEnd = time.Duration(o.Repeat) * p.period
	}
	return p, nil
}

func (p *planner) scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) / p.o.RateScale)
}

// before orders items by intended time, then by position in the trace.
func (it *item) before(intended time.Duration, pos int) bool {
	return it.intended < intended || it.intended == intended && it.pos < pos
}

// each calls yield with every item of the run in order until yield returns false. Items are
// new on each call and yield may keep them. A failure to read the trace ends the walk and is
// kept in p.err.
func (p *planner) each(yield func(*item) bool) {
	o := p.o
	left := o.MaxRequests
	emit := func(it *item) bool {
		if o.Duration > 0 && o.Concurrency == 0 && it.intended >= o.Duration {
			return false // items come in intended order: the rest are outside too
		}
		if o.MaxRequests > 0 {
			if left <= 0 {
				return false
			}
			if len(it.turns) > left {
				it.turns = it.turns[:left]
				it.cut()
			}
			left -= len(it.turns)
		}
		p.emitted += len(it.turns)
		return yield(it)
	}
	for k := 0; k < o.Repeat; k++ {
		off := time.Duration(k) * p.period
		session := func(i int) *item {
			t := p.sessions[i]
			return &item{turns: t.turns, repeat: k, intended: off + t.intended, pos: t.pos, deps: t.deps, graph: t.graph, lead: t.lead}
		}
		si := 0
		err := p.src.Singles(func(pos int, q *traces.Request) error {
			intended := off + p.scale(q.Arrival)
			for ; si < len(p.sessions) && p.sessions[si].before(intended-off, pos); si++ {
				if !emit(session(si)) {
					return errPlanStop
				}
			}
			it := &item{repeat: k, intended: intended, pos: pos}
			it.one[0] = q
			it.turns = it.one[:]
			if !emit(it) {
				return errPlanStop
			}
			return nil
		})
		if err == errPlanStop {
			return
		}
		if err != nil {
			p.err = err
			return
		}
		for ; si < len(p.sessions); si++ {
			if !emit(session(si)) {
				return
			}
		}
	}
}

// lookahead is how many requests the open-loop preparer builds ahead of the dispatcher.
const lookahead = 256

// prepared is an item with its first turn's call built (nil once the run is interrupted).
type prepared struct {
	it *item
	k  *call
}

// preparer walks the plan, synthesizing prompts and encoding bodies of first turns ahead of
// the dispatcher, in item order, so that work is neither schedule lag nor queue time.
type preparer struct {
	calls chan prepared // closed at the end of the plan
	ready chan struct{} // closed once lookahead calls (or all) are built
	stop  chan struct{}
}

func (r *runner) startPreparer(p *planner) *preparer {
	pr := &preparer{calls: make(chan prepared, lookahead), ready: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		defer close(pr.calls)
		readied := false
		markReady := func() {
			if !readied {
				readied = true
				close(pr.ready)
			}
		}
		defer markReady()
		n := 0
		p.each(func(it *item) bool {
			if n == lookahead {
				markReady()
			}
			n++
			var k *call
			if r.soft.Err() == nil {
				k = r.buildCall(it, it.lead, nil)
			}
			select {
			case pr.calls <- prepared{it, k}:
				return true
			case <-pr.stop:
				return false
			}
		})
	}()
	return pr
}

func (p *preparer) close() { close(p.stop) }

// leadGap is the least gap to the previous request for which the dispatcher starts a request
// ahead (leadClock). Closer requests it sends itself: it has just woken for the previous one
// and waits out the gap mostly in its busy wait, where a request sleeping on its own would
// need a wake-up of its own (8,000 short requests a second, 2 cores, 500 ms steps
// interleaved: step lag P99 median 3.37 ms when every request slept itself against 2.45 ms
// for the dispatcher sending each; with this rule and the timerfd sleep 0.86 against 2.28).
const leadGap = 300 * time.Microsecond

// pollerStreams is the number of HTTP/1.1 requests in flight from which the kernel sleeps
// leave the network poller for nanosleep (fineSleep). bench --scenario long-streams over
// HTTP/1.1, 2 cores, lag P99: 1,000 streams 0.51–1.31 ms on the timerfd (nanosleep 1.22–4.77),
// 5,000 streams 29–47 ms (nanosleep 1.0–10.4); the figure between is not measured.
const pollerStreams = 2000

// sleepViaPoller says whether the kernel sleeps may wait through the network poller, with
// inFlight requests in flight (pollerStreams).
func sleepViaPoller(http2 bool, inFlight int64) bool { return http2 || inFlight < pollerStreams }

// openLoop dispatches each item at its intended time, never waiting for earlier ones. It
// takes each item's call from the preparer; if that falls behind, the dispatcher waits for it
// and the lag shows. Once the run is interrupted, the rest of the plan is recorded as dropped.
//
// On the real clock (a leadClock) the dispatcher starts each request at least leadGap after
// the previous one a lead ahead of its time (the clock's fine-sleep window), and the
// request's goroutine sleeps the rest itself: a wake-up that comes late (on a loaded machine
// a sleeping thread can wake milliseconds late) then delays that one request, where a
// dispatcher sending every request itself passed its lateness on to every request due while
// it slept (at 2,000 requests a second, a 4 ms late wake made eight late sends).
func (r *runner) openLoop(pre *preparer) {
	var lead time.Duration
	if c, ok := r.clock.(leadClock); ok {
		lead = c.lead()
	}
	prev := time.Duration(math.MinInt64 / 2)
	for pc := range pre.calls {
		it, k := pc.it, pc.k
		led := lead > 0 && it.intended-prev >= leadGap
		prev = it.intended
		wake := it.intended
		if led {
			wake -= lead
		}
		err := r.soft.Err()
		if err == nil && k != nil {
			err = r.clock.SleepUntil(r.soft, r.start.Add(wake))
		}
		if err == nil && k != nil && r.waiting != nil {
			// Backpressure: past MaxWaiting requests dispatched and not yet sent, the
			// dispatcher waits for one to go out. The wait is schedule lag (the run is then
			// client-limited), and late requests are not all held in memory at once.
			select {
			case r.waiting <- struct{}{}:
			case <-r.soft.Done():
				err = r.soft.Err()
			}
		}
		if err != nil || k == nil {
			r.dropItem(it, 0, int64(it.intended), 0, "never sent: the run was interrupted")
			continue
		}
		k.waiting = true
		r.progress.Waiting.Add(1)
		dispatched := r.c.now()
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if led {
				if err := r.clock.SleepUntil(r.soft, r.start.Add(it.intended)); err != nil {
					r.unwait(k)
					r.dropItem(it, 0, int64(it.intended), 0, "never sent: the run was interrupted")
					return
				}
				dispatched = r.c.now()
			}
			r.runItem(it, k, int64(it.intended), dispatched)
		}()
	}
}

// closedLoop keeps Concurrency workers busy, each taking the next item when it is done, and
// returns when they are.
func (r *runner) closedLoop(p *planner) {
	next, stop := iter.Pull(iter.Seq[*item](p.each))
	defer stop()
	var mu sync.Mutex
	ended := false // Duration has passed: the rest of the plan is outside the run
	take := func() (*item, bool) {
		mu.Lock()
		defer mu.Unlock()
		if ended {
			return nil, false
		}
		return next()
	}
	var wg sync.WaitGroup
	worker := func() {
		defer wg.Done()
		for {
			it, ok := take()
			if !ok {
				return
			}
			now := r.c.now()
			if r.soft.Err() != nil {
				r.dropItem(it, 0, now, 0, "never sent: the run was interrupted")
				continue
			}
			if r.opts.Duration > 0 && time.Duration(now) >= r.opts.Duration {
				r.skipped.Add(int64(len(it.turns)))
				mu.Lock()
				if !ended {
					ended = true
					stop() // the planner stops counting: the rest is total - emitted
				}
				mu.Unlock()
				return
			}
			k := r.buildCall(it, it.lead, nil)
			now = r.c.now()
			r.runItem(it, k, now, now)
		}
	}
	wg.Add(r.opts.Concurrency)
	for range r.opts.Concurrency {
		go worker()
	}
	wg.Wait()
}

// conversation is what a session has said so far.
type conversation struct {
	messages []traces.Message
	text     string
	tokens   int
	// reply is the turn's own output and its token count (a join carries its other
	// dependencies' replies).
	reply       string
	replyTokens int
}

// runItem sends the turns of it in order: the first (k, already built) at intended and
// dispatched already, each later one after the previous response plus its think time. A later
// turn is built before its think time is slept, so building it costs no lag.
func (r *runner) runItem(it *item, k *call, intended, dispatched int64) {
	if it.graph {
		r.runGraph(it, k, intended, dispatched)
		return
	}
	var conv conversation
	var prevEnd int64
	for i, q := range it.turns {
		if i > 0 {
			think, tool := r.scaledNs(q.Think), r.scaledNs(q.ToolDelay)
			intended = prevEnd + think + tool
			if r.opts.Duration > 0 && time.Duration(intended) >= r.opts.Duration {
				r.skipped.Add(int64(len(it.turns) - i))
				return
			}
			k = r.buildCall(it, i, &conv)
			k.after, k.think, k.toolWait = it.turns[i-1].ID, think, tool
			if err := r.clock.SleepUntil(r.soft, r.start.Add(time.Duration(intended))); err != nil {
				r.dropItem(it, i, intended, 0, "never sent: the run was interrupted during the think time")
				return
			}
			dispatched = r.c.now()
		}
		ok, end := r.send(it, i, k, &conv, intended, dispatched)
		if !ok {
			if i+1 < len(it.turns) {
				r.dropItem(it, i+1, end, 0, "never sent: an earlier turn of this session failed")
			}
			return
		}
		prevEnd = end
	}
}

// record takes a zeroed Record from the pool and fills its identity.
func (r *runner) record(it *item, turn int, intended int64) *metrics.Record {
	rec, _ := r.recs.Get().(*metrics.Record)
	if rec == nil {
		rec = &metrics.Record{}
	}
	q := it.turns[turn]
	rec.ID, rec.Class, rec.Session, rec.Turn, rec.Repeat = q.ID, q.Class, q.Session, q.Turn, it.repeat
	rec.Model = q.Model // per-request model (issue 38)
	rec.Intended = intended
	rec.Phase = r.phase(intended)
	rec.InputTokens = q.InputTokens
	rec.RequestedTokens = q.OutputTokens
	rec.ServerInputTokens, rec.ServerOutputTokens = -1, -1
	return rec
}

func (r *runner) phase(intended int64) string {
	return metrics.PhaseOf(time.Duration(intended), r.opts.Warmup, r.opts.Cooldown, r.runEnd)
}

// emit hands rec to the sink, counts it and recycles it.
func (r *runner) emit(rec *metrics.Record) {
	if rec.OK() {
		r.succeeded.Add(1)
	} else if rec.Cancelled() {
		r.cancelled.Add(1) // neither success nor failure (cancel.go)
	} else {
		r.failed.Add(1)
		r.progress.Failed.Add(1)
		if rec.Failure == metrics.FailDropped {
			r.dropped.Add(1)
		}
	}
	r.progress.OutputTokens.Add(int64(rec.OutputTokens))
	r.progress.Done.Add(1)
	r.sink(rec)
	chunks := rec.Chunks[:0]
	*rec = metrics.Record{Chunks: chunks}
	if cap(chunks) > 1<<16 {
		rec.Chunks = nil
	}
	r.recs.Put(rec)
}

// dropItem emits a FailDropped record for every turn of it from turn on.
func (r *runner) dropItem(it *item, turn int, intended, dispatched int64, why string) {
	if stoppedEarly(r.soft) {
		r.skipped.Add(int64(len(it.turns) - turn)) // outside a run stopped on purpose (stop.go)
		return
	}
	for i := turn; i < len(it.turns); i++ {
		rec := r.record(it, i, intended)
		rec.Dispatched = dispatched
		rec.Failure = metrics.FailDropped
		rec.Error = why
		r.emit(rec)
	}
}

// dropSent records turn i, which send could not send, as dropped: with the turns after it in a
// sequential session (they would have followed it), alone in a graph (runGraph drops its
// dependents).
func (r *runner) dropSent(it *item, i int, intended, dispatched int64, why string) {
	if !it.graph {
		r.dropItem(it, i, intended, dispatched, why)
		return
	}
	rec := r.record(it, i, intended)
	rec.Dispatched = dispatched
	rec.Failure = metrics.FailDropped
	rec.Error = why
	r.emit(rec)
}

// send sends turn i of it (the call k) and emits its record; a success extends conv. It
// reports whether the turn succeeded and when it ended.
func (r *runner) send(it *item, i int, k *call, conv *conversation, intended, dispatched int64) (bool, int64) {
	if r.sem != nil {
		acquired := false
		select {
		case r.sem <- struct{}{}:
			acquired = true
		case <-r.soft.Done():
		}
		if r.soft.Err() != nil {
			if acquired {
				<-r.sem
			}
			r.unwait(k)
			r.dropSent(it, i, intended, dispatched, "never sent: the run was interrupted while the request waited for a concurrency slot")
			return false, r.c.now()
		}
		defer func() { <-r.sem }()
	} else if r.soft.Err() != nil {
		r.unwait(k)
		r.dropSent(it, i, intended, dispatched, "never sent: the run was interrupted")
		return false, r.c.now()
	}
	r.unwait(k)
	rec := r.record(it, i, intended)
	rec.Dispatched = dispatched
	if k.inputTokens > 0 {
		rec.InputTokens = k.inputTokens
	}
	rec.After, rec.Think, rec.ToolDelay = k.after, k.think, k.toolWait
	r.sent.Add(1)
	r.progress.Sent.Add(1)
	r.progress.InFlight.Add(1)
	out := r.c.execute(r.hard, k, rec)
	settleInput(rec, k)
	r.progress.InFlight.Add(-1)
	ok, end := rec.OK(), rec.End
	if ok && k.keepText {
		if k.chat {
			conv.messages = append(k.messages, traces.Message{Role: "assistant", Content: out})
		} else {
			conv.text = k.prompt + out
		}
		conv.tokens = rec.InputTokens + rec.OutputTokens
		conv.reply, conv.replyTokens = out, rec.OutputTokens
	}
	r.emit(rec)
	return ok, end
}

// unwait frees k's place among the requests dispatched and not yet sent, if it holds one.
func (r *runner) unwait(k *call) {
	if k.waiting {
		k.waiting = false
		if r.waiting != nil {
			<-r.waiting
		}
		r.progress.Waiting.Add(-1)
	}
}

// joinMessages flattens chat messages into one completion prompt.
func joinMessages(ms []traces.Message) string {
	n := 0
	for _, m := range ms {
		n += len(m.Content) + 1
	}
	b := make([]byte, 0, n)
	for i, m := range ms {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, m.Content...)
	}
	return string(b)
}
