package refengine

import (
	"fmt"
	"sort"
	"time"

	"github.com/llmbench/llmbench/tokenizer"
)

// SimRequest is one request of a simulated trace.
type SimRequest struct {
	// ID keys the request's timeline (Timeline.ID).
	ID string
	// Arrival is the offset from the trace start at which the request reaches the engine.
	Arrival time.Duration
	// Prompt is the prompt text; when empty, PromptTokens gives the prompt length and the
	// prompt's content is unique to the request except for its HashIDs blocks.
	Prompt       string
	PromptTokens int
	// HashIDs are shared-prefix block ids: entry j stands for prompt tokens
	// [j·HashIDTokens, (j+1)·HashIDTokens), so requests with equal leading HashIDs share
	// that prefix in the prefix cache.
	HashIDs []int64
	// MaxTokens is the output length (>= 1); MinTokens and IgnoreEOS matter only with the
	// early-eos fault.
	MaxTokens int
	MinTokens int
	IgnoreEOS bool
	// Seed and Temperature select the output text (see the package doc); Temperature 0 is
	// greedy.
	Seed        *int64
	Temperature float64
}

// SimStats are the engine's counters over a simulation.
type SimStats struct {
	Steps            int64
	BusyTime         time.Duration // simulated time spent in steps
	Makespan         time.Duration // first arrival to last finish
	Preemptions      int64
	PreemptedReqs    int64
	PrefixQueries    int64 // prompt tokens looked up in the prefix cache
	PrefixHits       int64 // prompt tokens found
	SpecPasses       int64
	SpecDraftTokens  int64
	SpecAccepted     int64
	PromptTokens     int64
	GenerationTokens int64
	ComputedTokens   int64 // including recomputation after preemption
	MaxRunning       int
	MaxBlocksUsed    int
	NumBlocks        int
	PrefixEvictions  int64
}

// SimResult is the outcome of Simulate.
type SimResult struct {
	// Timelines holds one timeline per request, in input order. Their Epoch is the Unix
	// epoch and Scale 1: wall time = Epoch + offset.
	Timelines []Timeline
	Stats     SimStats
	Info      Info
}

// Simulate runs reqs through the same scheduler and step-time model as the HTTP engine on a
// virtual clock: no HTTP, no goroutines, no sleeping. It is deterministic for a given input and
// Config (Config.Seed seeds unseeded sampling; HTTP-level faults do not apply, early-eos does).
// It holds every request's timeline; a Simulation fed in arrival order holds only those in
// flight.
func Simulate(reqs []SimRequest, cfg Config) (*SimResult, error) {
	sim, err := NewSimulation(cfg, nil)
	if err != nil {
		return nil, err
	}
	res := &SimResult{Timelines: make([]Timeline, len(reqs)), Info: sim.Info()}
	seqs := make([]seq, len(reqs))
	order := make([]int, len(reqs))
	for i := range reqs {
		order[i] = i
		if err := sim.prepare(&seqs[i], &res.Timelines[i], i, &reqs[i]); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return reqs[order[a]].Arrival < reqs[order[b]].Arrival })
	for _, i := range order {
		sim.feed(&seqs[i])
	}
	st, err := sim.Finish()
	if err != nil {
		return nil, err
	}
	for i := range seqs {
		seqs[i].hashes, seqs[i].blocks = nil, nil
	}
	res.Stats = st
	return res, nil
}

// Simulation is Simulate fed one request at a time, in arrival order, as a trace is read: each
// request's timeline is handed to the done function when the request finishes and is then
// released, so memory grows with the requests in flight, not with the trace. For the same
// requests, Add in arrival order (input order among equal arrivals, with pos the input index)
// gives exactly Simulate's timelines.
type Simulation struct {
	r        *resolved
	cl       *cluster
	tok      tokenizer.Reference
	done     func(pos int, tl *Timeline)
	started  bool
	first    time.Duration // the first arrival
	last     time.Duration // the latest arrival added
	inFlight int
	finished bool
}

// NewSimulation starts a simulation of the engine cfg. done is called with each finished
// request's input index and timeline, in the order requests finish (by simulated time); the
// timeline is the caller's to keep. A nil done discards them.
func NewSimulation(cfg Config, done func(pos int, tl *Timeline)) (*Simulation, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	s := &Simulation{r: r, done: done}
	s.cl = r.newCluster(nil, true)
	s.cl.noise = newNoiser(r.Noise, r.Seed)
	return s, nil
}

// Info describes the simulated engine.
func (s *Simulation) Info() Info { return s.r.info(1) }

// InFlight is the number of requests added and not yet finished.
func (s *Simulation) InFlight() int { return s.inFlight }

// Add simulates the engine up to q's arrival, handing every request finished before it to the
// done function, and submits q. pos is q's index in the trace, which seeds its output as in
// Simulate. Arrivals must not decrease from one call to the next.
func (s *Simulation) Add(pos int, q *SimRequest) error {
	if s.finished {
		return fmt.Errorf("refengine: request %d (%s) added after the simulation finished", pos, q.ID)
	}
	if s.started && q.Arrival < s.last {
		return fmt.Errorf("refengine: request %d (%s): arrival %v is before the previous request's %v; a Simulation takes requests in arrival order",
			pos, q.ID, q.Arrival, s.last)
	}
	sq := &seq{tl: &Timeline{}}
	if err := s.prepare(sq, sq.tl, pos, q); err != nil {
		return err
	}
	s.feed(sq)
	return nil
}

// prepare validates q and sets up its sequence and timeline.
func (s *Simulation) prepare(sq *seq, tl *Timeline, pos int, q *SimRequest) error {
	r := s.r
	if q.Arrival < 0 {
		return fmt.Errorf("refengine: request %d (%s): arrival %v is negative", pos, q.ID, q.Arrival)
	}
	var ids []int
	promptTokens := q.PromptTokens
	var promptHash uint64
	if q.Prompt != "" {
		ids = s.tok.Encode(q.Prompt)
		promptTokens = len(ids)
		promptHash = hashString(fnvOffset, q.Prompt)
	} else {
		promptHash = hashString(hashUint(fnvOffset, uint64(q.PromptTokens)), q.ID)
		for _, h := range q.HashIDs {
			promptHash = hashUint(promptHash, uint64(h))
		}
	}
	switch {
	case promptTokens < 1:
		return fmt.Errorf("refengine: request %d (%s): the prompt is empty; give Prompt or PromptTokens >= 1", pos, q.ID)
	case q.MaxTokens < 1:
		return fmt.Errorf("refengine: request %d (%s): MaxTokens %d must be >= 1", pos, q.ID, q.MaxTokens)
	case promptTokens > r.maxModelLen || q.MaxTokens > r.maxModelLen-promptTokens: // no sum: it could wrap
		return fmt.Errorf("refengine: request %d (%s): %d prompt + %d output tokens exceed the max model length %d (the model's context, capped by the KV cache); shorten it or give more KV memory",
			pos, q.ID, promptTokens, q.MaxTokens, r.maxModelLen)
	case q.MinTokens < 0 || q.MinTokens > q.MaxTokens:
		return fmt.Errorf("refengine: request %d (%s): MinTokens %d must be between 0 and MaxTokens %d", pos, q.ID, q.MinTokens, q.MaxTokens)
	}
	target := q.MaxTokens
	if r.Faults.EarlyEOS > 0 {
		plan := r.Faults.plan(hashString(fnvOffset, q.ID), q.Arrival)
		target = plan.target(q.MaxTokens, q.MinTokens, q.IgnoreEOS)
	}
	*tl = Timeline{ID: q.ID, Epoch: time.Unix(0, 0).UTC(), Scale: 1, Arrival: q.Arrival, FirstScheduled: -1, Finish: -1,
		PromptTokens: promptTokens, MaxTokens: q.MaxTokens,
		OutputSeed: outputBase(promptHash, q.Temperature, q.Seed, tokenizer.Mix(r.Seed^tokenizer.Mix(uint64(pos))))}
	sq.tl = tl
	sq.pos = pos
	sq.promptTokens = promptTokens
	sq.target = target
	if !r.DisablePrefixCaching {
		sq.hashes = blockHashes(ids, q.HashIDs, promptTokens, r.BlockSize, r.HashIDTokens, promptHash)
	}
	seed := promptHash
	if q.Seed != nil {
		seed = uint64(*q.Seed)
	}
	sq.rng = tokenizer.Mix(seed ^ 0x5eed5eed5eed5eed)
	return nil
}

// feed runs the engine until sq's arrival and submits it. Between calls the simulation rests
// just after completing the steps that ended at cl.now, with every arrival up to cl.now
// submitted: the point of Simulate's loop where the next arrival decides what comes first.
func (s *Simulation) feed(sq *seq) {
	cl := s.cl
	at := sq.tl.Arrival
	if !s.started {
		s.started, s.first = true, at
		cl.now = at
		cl.advance()
	}
	for at > cl.now {
		cl.planIdle()
		t, ok := cl.nextEvent()
		if !ok || at < t {
			t = at
		}
		cl.now = max(cl.now, t)
		cl.advance()
		s.drain()
	}
	s.last = at
	emissionCap := sq.target
	if s.r.SpecK > 0 {
		emissionCap = emissionCap/2 + 1
	}
	sq.tl.Emissions = make([]Emission, 0, emissionCap)
	cl.submit(sq)
	s.inFlight++
}

// drain hands the requests finished since the last call to the done function.
func (s *Simulation) drain() {
	s.cl.drainDone(func(sq *seq) {
		s.inFlight--
		sq.hashes, sq.blocks = nil, nil
		if s.done != nil {
			s.done(sq.pos, sq.tl)
		}
		sq.tl = nil
	})
}

// Finish runs the engine until every request added has finished, handing each to the done
// function, and returns the engine's counters. No request may be added after it.
func (s *Simulation) Finish() (SimStats, error) {
	cl, r := s.cl, s.r
	if !s.finished {
		s.finished = true
		for {
			cl.planIdle()
			t, ok := cl.nextEvent()
			if !ok {
				if cl.pending() {
					return SimStats{}, fmt.Errorf("refengine: simulation stalled with %d running and %d waiting requests (KV cache of %d blocks too small?)",
						cl.running(), cl.waiting(), r.numBlocks)
				}
				break
			}
			cl.now = max(cl.now, t)
			cl.advance()
			s.drain()
		}
	}
	st := cl.stats()
	res := SimStats{
		Steps: st.Steps, BusyTime: st.BusyTime, Preemptions: st.Preemptions, PreemptedReqs: st.PreemptedRequests,
		PrefixQueries: st.PrefixQueries, PrefixHits: st.PrefixHits, SpecPasses: st.SpecPasses,
		SpecDraftTokens: st.SpecDraftTokens, SpecAccepted: st.SpecAccepted, PromptTokens: st.PromptTokens,
		GenerationTokens: st.GenerationTokens, ComputedTokens: st.ComputedTokens, MaxRunning: st.MaxRunning,
		MaxBlocksUsed: st.MaxBlocksUsed, NumBlocks: r.numBlocks, PrefixEvictions: st.PrefixEvictions,
	}
	if s.started {
		res.Makespan = cl.now - s.first
	}
	return res, nil
}
