package refengine

import (
	"time"

	"github.com/llmbench/llmbench/refengine/perf"
	"github.com/llmbench/llmbench/tokenizer"
)

type seqState uint8

const (
	stWaiting seqState = iota
	stRunning
	stFinished
	stHandoff // left a prefill pool; its KV cache is in transfer
)

// seq is one request inside the scheduler.
type seq struct {
	tl  *Timeline // ground truth; owned by the scheduler goroutine
	pos int       // the request's index in a simulated trace (Simulation); 0 over HTTP

	promptTokens int
	encodeTokens int // image tokens the vision encoder computes when the prefill starts (images.go)
	target       int // output tokens this request generates
	numTokens    int // prompt + output tokens so far
	numComputed  int // tokens whose KV is in the cache
	numOutput    int // output tokens emitted
	blocks       []int32
	hashes       []uint64 // chained hashes of the full prompt blocks (nil: no prefix caching)
	hashedBlocks int      // leading blocks already registered in the prefix cache
	state        seqState
	aborted      bool
	everRun      bool
	drafted      bool    // the last step emitted a token, so drafts can be proposed for the next
	rng          uint64  // speculative acceptance draws
	rho          float64 // ngram speculation: the request's repetition (its class's)

	sched int // tokens scheduled in the current step
	spec  int // draft positions verified (the draft's length, or the tree's depth)

	sink emitSink // nil in Simulate
	pool *core    // the pool the request is in (nil while its KV is in transfer)

	lora int // LoRA adapter (lora.go): 0 the base model, i+1 Config.LoRAs[i]
}

// emitSink receives a sequence's tokens as the scheduler emits them (HTTP streams).
type emitSink interface {
	// emit delivers output tokens [start, start+n) at simulated time at; final is true for the
	// last delivery (finishReason says why).
	emit(start, n int, at time.Duration, final bool, finishReason string)
}

// stepPricer prices engine steps; *perf.Roofline implements it.
type stepPricer interface {
	StepTime(w perf.Work) time.Duration
	DraftStepTime(draft perf.Model, w perf.Work) time.Duration
	HeadsStepTime(seqs int) time.Duration
}

// coreStats are cumulative scheduler counters.
type coreStats struct {
	Steps             int64
	BusyTime          time.Duration
	Preemptions       int64
	PrefixQueries     int64 // prompt tokens looked up in the prefix cache
	PrefixHits        int64 // of which found
	SpecPasses        int64
	SpecDraftTokens   int64
	SpecAccepted      int64
	PromptTokens      int64 // prompt tokens of admitted requests (counted once per request)
	GenerationTokens  int64
	ComputedTokens    int64 // tokens computed, including recomputation after preemption
	FinishedRequests  int64
	AbortedRequests   int64
	MaxRunning        int
	MaxBlocksUsed     int
	PrefixEvictions   int64
	PreemptedRequests int64

	// LoRA adapters (lora.go): adapters copied into a slot, adapters evicted to make room,
	// and the time the copies took.
	LoRALoads     int64
	LoRAEvictions int64
	LoRALoadTime  time.Duration
	// SpecAcceptedPos counts, per draft position (0-based, the first MaxSpecPositions), the
	// passes that accepted the draft token there (issue 38; vLLM's
	// spec_decode_num_accepted_tokens_per_pos).
	SpecAcceptedPos [MaxSpecPositions]int64
}

// observer sees per-request latencies (Prometheus histograms); nil in Simulate.
type observer interface {
	firstToken(ttft time.Duration)
	interToken(gap time.Duration, tokens int)
	queued(wait time.Duration)
	finished(e2e, decode time.Duration, outputTokens int)
}

// core is the vLLM v1 style scheduler plus the KV block manager. It knows nothing about clocks,
// goroutines or HTTP: plan builds a step at c.now, the caller lets the step's time pass, and
// complete applies it. All methods run on one goroutine (or under the engine's lock).
type core struct {
	blockSize     int
	maxSeqs       int
	maxBatched    int
	prefixCaching bool
	specK         int
	specAlpha     float64
	specAlphas    []float64 // per draft position, when set (replaces specAlpha)
	specMethod    string    // perf.Spec*
	specTree      int       // candidates an eagle or medusa step verifies (specK: a chain)
	draft         perf.Model
	hasDraft      bool

	pricer stepPricer
	pool   *blockPool
	obs    observer

	running   []*seq
	waiting   deque
	scheduled []*seq
	work      perf.Work
	draftWork perf.Work
	draftPass int
	headSeqs  int // sequences the Medusa heads run on this step

	now   time.Duration
	stats coreStats
	done  []*seq // finished or aborted since the caller last drained it (when keepDone)

	keepDone bool

	// handoff marks a disaggregated prefill pool: a request leaves it after its first token,
	// keeping its blocks until the cluster has transferred its KV cache.
	handoff  bool
	handoffs []*seq

	lora *loraSlots // nil without adapters (lora.go)
	// recent are the steps that ended within the power gauge's window; busySec and computeSec
	// the steps' time and its compute part since the start, in seconds (issue 39; power.go).
	recent              []stepSpan
	busySec, computeSec float64
}

// plan schedules the next step and returns its duration; ok is false when nothing can run.
// Running requests are scheduled first, in admission order; then waiting requests, first
// come first served, unless scheduling the running ones preempted.
func (c *core) plan() (d time.Duration, ok bool) {
	c.resetStep()
	budget, preempted := c.scheduleRunning(c.maxBatched)
	if !preempted {
		c.scheduleWaiting(budget)
	}
	if len(c.running) > c.stats.MaxRunning {
		c.stats.MaxRunning = len(c.running)
	}
	if u := c.pool.used(); u > c.stats.MaxBlocksUsed {
		c.stats.MaxBlocksUsed = u
	}
	if len(c.scheduled) == 0 {
		return 0, false
	}
	return c.stepTime(), true
}

// resetStep drops aborted requests and clears the previous step's batch and work.
func (c *core) resetStep() {
	c.dropAborted()
	c.scheduled = c.scheduled[:0]
	c.work = perf.Work{}
	c.draftWork = perf.Work{}
	c.draftPass = 0
	c.headSeqs = 0
	if c.lora != nil {
		c.lora.reset()
	}
}

// scheduleRunning schedules the running requests in admission order within budget tokens,
// preempting (by recomputation) the most recently admitted ones when the KV cache is full.
// It returns the budget left and whether it preempted.
func (c *core) scheduleRunning(budget int) (left int, preempted bool) {
	for i := 0; i < len(c.running) && budget > 0; i++ {
		s := c.running[i]
		n, spec := c.runningTokens(s, budget)
		scheduled := true
		for !c.ensureBlocks(s, s.numComputed+n) {
			// Recompute preemption of the most recently admitted request.
			victim := c.running[len(c.running)-1]
			c.running = c.running[:len(c.running)-1]
			c.preempt(victim)
			preempted = true
			if victim == s {
				scheduled = false
				break
			}
		}
		if !scheduled {
			break
		}
		c.add(s, n, spec)
		budget -= n
	}
	return budget, preempted
}

// runningTokens is the tokens a running request computes this step within budget (its
// uncomputed tokens plus the draft candidates it verifies) and its drafted positions.
func (c *core) runningTokens(s *seq, budget int) (n, spec int) {
	n = s.numTokens - s.numComputed
	if n == 1 && c.specK > 0 && s.drafted {
		spec = max(0, min(c.specK, s.target-s.numOutput-1))
		if spec > 0 && c.specMethod == perf.SpecNgram && !(uniform(&s.rng) < s.rho) {
			spec = 0 // no earlier text matches: nothing to draft this step
		}
		n += c.candidates(spec)
	}
	if n > budget {
		n = budget
		spec = max(0, n-(s.numTokens-s.numComputed)) // a tree that does not fit becomes a chain
	}
	return n, spec
}

// scheduleWaiting admits waiting requests first come first served while seats, budget and
// KV blocks last, matching a fresh request's prompt against the prefix cache.
func (c *core) scheduleWaiting(budget int) {
	var skipped []*seq // waiting for an adapter slot (lora.go), put back in order
	defer func() {
		for i := len(skipped) - 1; i >= 0; i-- {
			c.waiting.pushFront(skipped[i])
		}
	}()
	for c.waiting.len() > 0 && len(c.running) < c.maxSeqs && budget > 0 {
		s := c.waiting.front()
		if s.aborted {
			c.waiting.popFront()
			continue
		}
		if s.lora > 0 && !c.admitLoRA(s) {
			skipped = append(skipped, c.waiting.popFront())
			continue
		}
		hits, matched := 0, false
		if s.numComputed == 0 && len(s.blocks) == 0 {
			hits, matched = c.matchPrefix(s), true
		}
		n := min(s.numTokens-s.numComputed, budget)
		if !c.ensureBlocks(s, s.numComputed+n) {
			c.freeBlocks(s)
			if matched {
				s.numComputed, s.hashedBlocks = 0, 0
			}
			break
		}
		c.waiting.popFront()
		s.state = stRunning
		c.running = append(c.running, s)
		if !s.everRun {
			c.firstRun(s, hits)
		}
		c.add(s, n, 0)
		budget -= n
	}
}

// firstRun records a request's first scheduling: its timeline, its queueing time, its prompt
// and encoder work and its prefix-cache hits.
func (c *core) firstRun(s *seq, hits int) {
	s.everRun = true
	s.tl.FirstScheduled = c.now
	s.tl.CachedTokens = hits
	if c.obs != nil {
		c.obs.queued(c.now - s.tl.Arrival)
	}
	c.stats.PromptTokens += int64(s.promptTokens)
	c.work.EncoderTokens += s.encodeTokens
	if c.prefixCaching {
		c.stats.PrefixQueries += int64(s.promptTokens)
		c.stats.PrefixHits += int64(hits)
	}
}

// stepTime prices the planned step: the target model's pass, the draft model's passes and the
// Medusa heads; at least a nanosecond.
func (c *core) stepTime() time.Duration {
	d := c.pricer.StepTime(c.work)
	if c.lora != nil {
		d += c.lora.time()
	}
	if c.hasDraft && c.draftPass > 0 {
		d += time.Duration(c.draftPass) * c.pricer.DraftStepTime(c.draft, c.draftWork)
	}
	if c.headSeqs > 0 {
		d += c.pricer.HeadsStepTime(c.headSeqs)
	}
	if d <= 0 {
		d = time.Nanosecond
	}
	return d
}

func (c *core) add(s *seq, n, spec int) {
	s.sched, s.spec = n, spec
	if s.lora > 0 && c.lora != nil {
		c.lora.price(s.lora, n)
	}
	if spec > 0 && n > spec+1 {
		c.work.AddTree(n, spec+1, s.numComputed) // the last token and a tree of candidates
	} else {
		c.work.Add(n, s.numComputed)
	}
	if spec > 0 {
		switch c.specMethod {
		case perf.SpecMedusa:
			c.headSeqs++ // all heads run once, on the last token's hidden state
		case perf.SpecDraft, perf.SpecEAGLE:
			// spec passes; an EAGLE tree expands (candidates / depth) tokens per level.
			c.draftWork.Add(max(1, (n-1)/spec), s.numComputed)
			c.draftPass = max(c.draftPass, spec)
		}
	}
	c.scheduled = append(c.scheduled, s)
}

// candidates is how many draft tokens a step verifies for spec drafted positions: spec for a
// chain, the tree's share for a shallower tree near the end of a request.
func (c *core) candidates(spec int) int {
	if spec <= 0 || c.specTree <= c.specK {
		return spec
	}
	return (c.specTree*spec + c.specK - 1) / c.specK
}

// complete applies the planned step, which ended at simulated time at.
func (c *core) complete(at time.Duration, stepDur time.Duration) {
	c.now = at
	c.stats.Steps++
	c.stats.BusyTime += stepDur
	c.noteStep(at, stepDur)
	finished := false
	for _, s := range c.scheduled {
		if s.state != stRunning || s.aborted {
			continue
		}
		c.stats.ComputedTokens += int64(s.sched)
		emitted := 0
		if s.spec > 0 {
			a := 0
			for a < s.spec && uniform(&s.rng) < c.specAlphaAt(a, s.rho) {
				a++
			}
			c.stats.SpecPasses++
			c.stats.SpecDraftTokens += int64(s.spec)
			c.stats.SpecAccepted += int64(a)
			for i := 0; i < min(a, MaxSpecPositions); i++ {
				c.stats.SpecAcceptedPos[i]++
			}
			s.tl.SpecPasses++
			s.tl.SpecDraftTokens += s.spec
			s.tl.SpecAcceptedTokens += a
			s.numComputed = s.numTokens + a
			emitted = a + 1
		} else {
			s.numComputed += s.sched
			if s.numComputed >= s.numTokens {
				s.numComputed = s.numTokens
				emitted = 1
			}
		}
		if s.hashes != nil {
			c.registerBlocks(s)
		}
		s.drafted = emitted > 0
		if emitted == 0 {
			continue
		}
		start := s.numOutput
		s.numOutput += emitted
		s.numTokens += emitted
		c.stats.GenerationTokens += int64(emitted)
		tl := s.tl
		if c.obs != nil {
			if len(tl.Emissions) == 0 {
				c.obs.firstToken(at - tl.Arrival)
			} else {
				c.obs.interToken(at-tl.Emissions[len(tl.Emissions)-1].At, emitted)
			}
		}
		tl.Emissions = append(tl.Emissions, Emission{At: at, Tokens: emitted})
		tl.OutputTokens = s.numOutput
		done := s.numOutput >= s.target
		if done {
			c.finish(s, tl.finishReasonFor())
			finished = true
		} else if c.handoff {
			s.state = stHandoff
			s.pool = nil
			c.handoffs = append(c.handoffs, s)
			finished = true
		}
		if s.sink != nil {
			s.sink.emit(start, emitted, at, done, tl.FinishReason)
		}
	}
	if finished {
		c.compactRunning()
	}
}

func (c *core) finish(s *seq, reason string) {
	c.freeBlocks(s)
	s.blocks, s.hashes = nil, nil
	s.state = stFinished
	s.tl.Finish = c.now
	s.tl.FinishReason = reason
	s.tl.Done = true
	c.stats.FinishedRequests++
	if c.keepDone {
		c.done = append(c.done, s)
	}
	if c.obs != nil {
		c.obs.finished(c.now-s.tl.Arrival, c.now-s.tl.Emissions[0].At, s.numOutput)
	}
}

// compactRunning drops finished requests from running, keeping admission order.
func (c *core) compactRunning() {
	j := 0
	for _, s := range c.running {
		if s.state == stRunning {
			c.running[j] = s
			j++
		}
	}
	clear(c.running[j:])
	c.running = c.running[:j]
}

// dropAborted removes aborted requests from running and frees their blocks; aborted waiting
// requests are skipped when they reach the front.
func (c *core) dropAborted() {
	any := false
	for _, s := range c.running {
		if s.aborted && s.state == stRunning {
			c.abortSeq(s)
			any = true
		}
	}
	if any {
		c.compactRunning()
	}
}

func (c *core) abortSeq(s *seq) {
	c.freeBlocks(s)
	s.blocks, s.hashes = nil, nil
	s.state = stFinished
	s.tl.Finish = c.now
	s.tl.FinishReason = "abort"
	s.tl.Done = true
	c.stats.AbortedRequests++
	if c.keepDone {
		c.done = append(c.done, s)
	}
}

// MaxSpecPositions bounds the draft positions whose acceptances Stats counts one by one.
const MaxSpecPositions = 16

// abort marks s for removal; the scheduler drops it before the next step.
func (c *core) abort(s *seq) {
	if s.state == stFinished || s.aborted {
		return
	}
	s.aborted = true
	if s.state == stWaiting {
		c.abortSeq(s)
	}
}

func (c *core) preempt(s *seq) {
	c.freeBlocks(s)
	s.numComputed, s.hashedBlocks = 0, 0
	s.drafted = false
	s.state = stWaiting
	s.tl.Preemptions++
	if s.tl.Preemptions == 1 {
		c.stats.PreemptedRequests++
	}
	c.stats.Preemptions++
	c.waiting.pushFront(s)
}

// submit queues a new request (its timeline's Arrival is already set).
func (c *core) submit(s *seq) {
	s.state = stWaiting
	s.pool = c
	s.numTokens = s.promptTokens
	if s.promptTokens > c.pool.numBlocks()*c.blockSize-s.target {
		// More KV blocks than the cache holds: it would be preempted and recomputed
		// forever, its stream silent. It ends now instead, and its stream is told.
		c.abortSeq(s)
		if s.sink != nil {
			s.sink.emit(s.numOutput, 0, c.now, true, s.tl.FinishReason)
		}
		return
	}
	if need := min((s.promptTokens+s.target+c.blockSize-1)/c.blockSize, c.pool.numBlocks()); cap(s.blocks) < need {
		s.blocks = make([]int32, 0, need)
	}
	c.waiting.pushBack(s)
}

// submitHandoff queues a request whose prompt KV cache arrived from a prefill pool: only its
// last token remains to be computed.
func (c *core) submitHandoff(s *seq) {
	s.state = stWaiting
	s.pool = c
	s.numComputed = s.numTokens - 1
	s.hashes, s.hashedBlocks = nil, 0
	c.waiting.pushBack(s)
}

func (c *core) ensureBlocks(s *seq, tokens int) bool {
	need := (tokens + c.blockSize - 1) / c.blockSize
	for len(s.blocks) < need {
		b, ok := c.pool.alloc()
		if !ok {
			return false
		}
		s.blocks = append(s.blocks, b)
	}
	return true
}

// freeBlocks releases s's blocks in reverse order, so that a prefix's tail blocks are evicted
// before its head.
func (c *core) freeBlocks(s *seq) {
	for i := len(s.blocks) - 1; i >= 0; i-- {
		c.pool.release(s.blocks[i])
	}
	s.blocks = s.blocks[:0]
}

// matchPrefix takes the longest run of cached leading prompt blocks, never the whole request
// (its last token is always computed so that a next token can be sampled). It returns the
// number of tokens found.
func (c *core) matchPrefix(s *seq) int {
	if !c.prefixCaching || len(s.hashes) == 0 {
		return 0
	}
	maxBlocks := min(len(s.hashes), (s.numTokens-1)/c.blockSize)
	for i := 0; i < maxBlocks; i++ {
		b, ok := c.pool.lookup(s.hashes[i])
		if !ok {
			break
		}
		s.blocks = append(s.blocks, b)
	}
	s.hashedBlocks = len(s.blocks)
	s.numComputed = len(s.blocks) * c.blockSize
	return s.numComputed
}

// registerBlocks caches s's prompt blocks that have become full and computed.
func (c *core) registerBlocks(s *seq) {
	full := min(min(s.numComputed, s.promptTokens)/c.blockSize, len(s.hashes), len(s.blocks))
	for ; s.hashedBlocks < full; s.hashedBlocks++ {
		c.pool.register(s.blocks[s.hashedBlocks], s.hashes[s.hashedBlocks])
	}
}

// uniform draws a float64 in [0, 1) from a splitmix64 state.
func uniform(state *uint64) float64 {
	*state += 0x9e3779b97f4a7c15
	return float64(tokenizer.Mix(*state)>>11) / (1 << 53)
}

// deque is a ring buffer of sequences (waiting queue: preempted requests go to the front).
type deque struct {
	buf        []*seq
	head, size int
}

func (q *deque) len() int { return q.size }

func (q *deque) grow() {
	n := max(16, 2*len(q.buf))
	nb := make([]*seq, n)
	for i := 0; i < q.size; i++ {
		nb[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = nb, 0
}

func (q *deque) pushBack(s *seq) {
	if q.size == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.size)%len(q.buf)] = s
	q.size++
}

func (q *deque) pushFront(s *seq) {
	if q.size == len(q.buf) {
		q.grow()
	}
	q.head = (q.head - 1 + len(q.buf)) % len(q.buf)
	q.buf[q.head] = s
	q.size++
}

func (q *deque) front() *seq { return q.buf[q.head] }

// at is the i-th queued sequence from the front.
func (q *deque) at(i int) *seq { return q.buf[(q.head+i)%len(q.buf)] }

func (q *deque) popFront() *seq {
	s := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return s
}
