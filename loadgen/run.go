package loadgen

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

// item is one unit the scheduler dispatches: a single request, or a multi-turn session whose
// turns are sent one after another.
type item struct {
	turns    []*traces.Request // in Turn order; len 1 for a request outside a session
	repeat   int
	intended time.Duration // the first turn's intended offset from the run start
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
	runEnd   time.Duration // for the cool-down phase
	recs     sync.Pool
	wg       sync.WaitGroup
	progress *Progress
	prompter *workloads.Prompter

	sent, succeeded, failed, dropped, skipped atomic.Int64
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
	if err := validate(&opts); err != nil {
		return nil, err
	}
	c, err := newClient(opts.Target, opts.Dial)
	if err != nil {
		return nil, err
	}
	defer c.close()
	c.tok = opts.Tokenizer
	c.model = opts.Target.Model
	if c.model == "" {
		if c.model, err = c.discover(ctx); err != nil && ctx.Err() == nil {
			return nil, err
		}
		// Interrupted while discovering: nothing will be sent, and the run below records
		// every request as dropped, so the results still account for the whole trace.
	}
	if sink == nil {
		sink = func(*metrics.Record) {}
	}
	clock := opts.Clock
	if clock == nil {
		clock = newRealClock()
	}
	r := &runner{opts: opts, c: c, clock: clock, sink: sink, soft: ctx, progress: opts.Progress,
		prompter: workloads.NewPrompter(opts.Tokenizer, opts.Seed, opts.PromptBlockTokens)}
	if r.progress == nil {
		r.progress = &Progress{}
	}
	items, skipped := r.plan(reqs)
	r.skipped.Store(int64(skipped))
	if opts.MaxConcurrency > 0 {
		r.sem = make(chan struct{}, opts.MaxConcurrency)
	}
	hard, hardCancel := context.WithCancelCause(context.Background())
	defer hardCancel(nil)
	r.hard = hard
	finished := make(chan struct{})
	go func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		t := time.NewTimer(opts.Grace)
		defer t.Stop()
		select {
		case <-finished:
		case <-t.C:
			hardCancel(errInterrupted)
		}
	}()

	mode := "open-loop"
	var pre *preparer
	if opts.Concurrency > 0 {
		mode = "closed-loop"
	} else {
		// The first requests are built before the epoch, so their prompts cost no lag.
		pre = r.startPreparer(items)
		defer pre.close()
		select {
		case <-pre.ready:
		case <-ctx.Done():
		}
	}
	cpu0, cpuOK := processCPU()
	r.start = clock.Now()
	c.clock, c.start = clock, r.start
	if pre == nil {
		r.closedLoop(items)
	} else {
		r.openLoop(items, pre)
	}
	r.wg.Wait()
	end := clock.Now()
	close(finished)
	cpu1, _ := processCPU()

	res := &Result{
		Start:             r.start,
		Elapsed:           end.Sub(r.start),
		Model:             c.model,
		Mode:              mode,
		Sent:              int(r.sent.Load()),
		Succeeded:         int(r.succeeded.Load()),
		Failed:            int(r.failed.Load()),
		Dropped:           int(r.dropped.Load()),
		Skipped:           int(r.skipped.Load()),
		Interrupted:       ctx.Err() != nil,
		ClientCPUFraction: -1,
	}
	if wall := end.Sub(r.start); cpuOK && wall > 0 {
		res.ClientCPUFraction = float64(cpu1-cpu0) / (float64(wall) * float64(runtime.GOMAXPROCS(0)))
	}
	return res, nil
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
	case o.MaxRequests < 0 || o.Repeat < 0 || o.PromptBlockTokens < 0:
		return errors.New("max requests, repeat and prompt block tokens must be >= 0")
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
	return nil
}

// plan expands repeats, groups sessions, orders everything by intended time and applies
// MaxRequests and (open loop) Duration. It returns the items and how many requests it left
// out.
func (r *runner) plan(reqs []traces.Request) ([]item, int) {
	o := r.opts
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / o.RateScale) }
	var first, last time.Duration
	for i := range reqs {
		a := scale(reqs[i].Arrival)
		if i == 0 || a < first {
			first = a
		}
		if a > last {
			last = a
		}
	}
	period := last
	if len(reqs) > 1 {
		period += (last - first) / time.Duration(len(reqs)-1)
	}
	// Requests outside sessions share one array of pointers (one-element windows into it),
	// so the plan costs no allocation per request.
	ptrs := make([]*traces.Request, len(reqs))
	for i := range reqs {
		ptrs[i] = &reqs[i]
	}
	items := make([]item, 0, len(reqs)*o.Repeat)
	for k := 0; k < o.Repeat; k++ {
		off := time.Duration(k) * period
		sessions := map[string]int{}
		for i := range reqs {
			q := &reqs[i]
			if q.Session == "" {
				items = append(items, item{turns: ptrs[i : i+1 : i+1], repeat: k, intended: off + scale(q.Arrival)})
				continue
			}
			if j, ok := sessions[q.Session]; ok {
				items[j].turns = append(items[j].turns, q)
				continue
			}
			sessions[q.Session] = len(items)
			items = append(items, item{turns: []*traces.Request{q}, repeat: k})
		}
	}
	for i := range items {
		it := &items[i]
		if len(it.turns) > 1 || it.turns[0].Session != "" {
			sort.SliceStable(it.turns, func(a, b int) bool { return it.turns[a].Turn < it.turns[b].Turn })
			it.intended = time.Duration(it.repeat)*period + scale(it.turns[0].Arrival)
		}
	}
	sort.SliceStable(items, func(a, b int) bool { return items[a].intended < items[b].intended })

	skipped := 0
	if o.Duration > 0 && o.Concurrency == 0 {
		n := sort.Search(len(items), func(i int) bool { return items[i].intended >= o.Duration })
		for _, it := range items[n:] {
			skipped += len(it.turns)
		}
		items = items[:n]
	}
	if o.MaxRequests > 0 {
		left := o.MaxRequests
		for i := range items {
			if left <= 0 {
				for _, it := range items[i:] {
					skipped += len(it.turns)
				}
				items = items[:i]
				break
			}
			if n := len(items[i].turns); n > left {
				skipped += n - left
				items[i].turns = items[i].turns[:left]
			}
			left -= len(items[i].turns)
		}
	}
	// The run's nominal end: Duration, else the length of the replay (the trace's span plus
	// one mean gap, times Repeat).
	r.runEnd = o.Duration
	if r.runEnd == 0 {
		r.runEnd = time.Duration(o.Repeat) * period
	}
	return items, skipped
}

// lookahead is how many requests the open-loop preparer builds ahead of the dispatcher.
const lookahead = 256

// preparer synthesizes prompts and encodes bodies of first turns ahead of the dispatcher, in
// item order, so that work is neither schedule lag nor queue time.
type preparer struct {
	calls chan *call
	ready chan struct{} // closed once lookahead calls (or all) are built
	stop  chan struct{}
}

func (r *runner) startPreparer(items []item) *preparer {
	p := &preparer{calls: make(chan *call, lookahead), ready: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		readied := false
		markReady := func() {
			if !readied {
				readied = true
				close(p.ready)
			}
		}
		defer markReady()
		for i := range items {
			if i == lookahead {
				markReady()
			}
			select {
			case p.calls <- r.buildCall(&items[i], 0, nil):
			case <-p.stop:
				return
			}
		}
	}()
	return p
}

func (p *preparer) close() { close(p.stop) }

// openLoop dispatches each item at its intended time, never waiting for earlier ones. It
// takes each item's call from the preparer; if that falls behind, the dispatcher waits for it
// and the lag shows.
func (r *runner) openLoop(items []item, pre *preparer) {
	for i := range items {
		it := &items[i]
		var k *call
		select {
		case k = <-pre.calls:
		case <-r.soft.Done():
		}
		err := r.soft.Err()
		if err == nil {
			err = r.clock.SleepUntil(r.soft, r.start.Add(it.intended))
		}
		if err != nil {
			for j := i; j < len(items); j++ {
				r.dropItem(&items[j], 0, int64(items[j].intended), 0, "never sent: the run was interrupted")
			}
			return
		}
		dispatched := r.c.now()
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.runItem(it, k, int64(it.intended), dispatched)
		}()
	}
}

// closedLoop keeps Concurrency workers busy, each taking the next item when it is done.
func (r *runner) closedLoop(items []item) {
	var next atomic.Int64
	worker := func() {
		defer r.wg.Done()
		for {
			i := int(next.Add(1) - 1)
			if i >= len(items) {
				return
			}
			it := &items[i]
			now := r.c.now()
			if r.soft.Err() != nil {
				r.dropItem(it, 0, now, 0, "never sent: the run was interrupted")
				continue
			}
			if r.opts.Duration > 0 && time.Duration(now) >= r.opts.Duration {
				r.skipped.Add(int64(len(it.turns)))
				continue
			}
			k := r.buildCall(it, 0, nil)
			now = r.c.now()
			r.runItem(it, k, now, now)
		}
	}
	r.wg.Add(r.opts.Concurrency)
	for range r.opts.Concurrency {
		go worker()
	}
}

// conversation is what a session has said so far.
type conversation struct {
	messages []traces.Message
	text     string
	tokens   int
}

// runItem sends the turns of it in order: the first (k, already built) at intended and
// dispatched already, each later one after the previous response plus its think time. A later
// turn is built before its think time is slept, so building it costs no lag.
func (r *runner) runItem(it *item, k *call, intended, dispatched int64) {
	var conv conversation
	var prevEnd int64
	for i, q := range it.turns {
		if i > 0 {
			intended = prevEnd + int64(float64(q.Think)/r.opts.RateScale)
			if r.opts.Duration > 0 && time.Duration(intended) >= r.opts.Duration {
				r.skipped.Add(int64(len(it.turns) - i))
				return
			}
			k = r.buildCall(it, i, &conv)
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
	rec.Intended = intended
	rec.Phase = r.phase(intended)
	rec.InputTokens = q.InputTokens
	rec.RequestedTokens = q.OutputTokens
	rec.ServerInputTokens, rec.ServerOutputTokens = -1, -1
	return rec
}

func (r *runner) phase(intended int64) string {
	switch d := time.Duration(intended); {
	case d < r.opts.Warmup:
		return metrics.PhaseWarmup
	case r.opts.Cooldown > 0 && d >= r.runEnd-r.opts.Cooldown:
		return metrics.PhaseCooldown
	}
	return metrics.PhaseSteady
}

// emit hands rec to the sink, counts it and recycles it.
func (r *runner) emit(rec *metrics.Record) {
	if rec.OK() {
		r.succeeded.Add(1)
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
	for i := turn; i < len(it.turns); i++ {
		rec := r.record(it, i, intended)
		rec.Dispatched = dispatched
		rec.Failure = metrics.FailDropped
		rec.Error = why
		r.emit(rec)
	}
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
			r.dropItem(it, i, intended, dispatched, "never sent: the run was interrupted while the request waited for a concurrency slot")
			return false, r.c.now()
		}
		defer func() { <-r.sem }()
	} else if r.soft.Err() != nil {
		r.dropItem(it, i, intended, dispatched, "never sent: the run was interrupted")
		return false, r.c.now()
	}
	rec := r.record(it, i, intended)
	rec.Dispatched = dispatched
	if k.inputTokens > 0 {
		rec.InputTokens = k.inputTokens
	}
	r.sent.Add(1)
	r.progress.Sent.Add(1)
	r.progress.InFlight.Add(1)
	out := r.c.execute(r.hard, k, rec)
	r.progress.InFlight.Add(-1)
	ok, end := rec.OK(), rec.End
	if ok && k.keepText {
		if k.chat {
			conv.messages = append(k.messages, traces.Message{Role: "assistant", Content: out})
		} else {
			conv.text = k.prompt + out
		}
		conv.tokens = rec.InputTokens + rec.OutputTokens
	}
	r.emit(rec)
	return ok, end
}

// buildCall makes the wire request of turn i: its prompt (given or synthesized), carrying the
// conversation so far (conv may be nil for a first turn), and its encoded body.
func (r *runner) buildCall(it *item, i int, conv *conversation) *call {
	if conv == nil {
		conv = &conversation{}
	}
	q := it.turns[i]
	k := &call{
		requestID:   q.ID,
		maxTokens:   q.OutputTokens,
		temperature: q.Temperature,
		seed:        q.Seed,
		keepText:    i+1 < len(it.turns),
	}
	if r.opts.Repeat > 1 {
		k.requestID = q.ID + ".r" + strconv.Itoa(it.repeat)
	}
	switch r.opts.Target.API {
	case "chat":
		k.chat = true
	case "completions":
	default:
		k.chat = len(q.Messages) > 0
	}
	synthesized := false
	text := q.Prompt
	if text == "" && len(q.Messages) == 0 {
		text = r.promptText(q)
		synthesized = true
	}
	if k.chat {
		msgs := make([]traces.Message, 0, len(conv.messages)+len(q.Messages)+1)
		msgs = append(msgs, conv.messages...)
		if len(q.Messages) > 0 {
			msgs = append(msgs, q.Messages...)
		} else {
			msgs = append(msgs, traces.Message{Role: "user", Content: text})
		}
		k.messages = msgs
	} else {
		if len(q.Messages) > 0 && text == "" {
			text = joinMessages(q.Messages)
			synthesized = false
		}
		k.prompt = conv.text + text
	}
	switch {
	case r.opts.Tokenizer != nil && (!synthesized || i > 0):
		n := 0
		if k.chat {
			for _, m := range k.messages {
				n += r.opts.Tokenizer.Count(m.Content)
			}
		} else {
			n = r.opts.Tokenizer.Count(k.prompt)
		}
		k.inputTokens = n
	case i > 0:
		k.inputTokens = conv.tokens + q.InputTokens
	}
	k.body, k.bodyErr = r.c.body(k)
	return k
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
