package refengine

import (
	"fmt"
	"time"
)

// Simulation is Simulate fed one request at a time, in arrival order, as a trace is read or as
// earlier requests release later ones (a session's next turn, RunUntil): each request's
// timeline is handed to the done function when the request finishes and is then released, so
// memory grows with the requests in flight, not with the trace; those waiting behind an
// engine that has fallen behind are held compactly (simulation_backlog.go). For the same
// requests, Add in arrival order (input order among equal arrivals, with pos the input index)
// gives exactly Simulate's timelines. It is one engine (Simulate's one-replica case of SimulateCluster).
type Simulation struct {
	r        *resolved
	cl       *cluster
	p        *preparer
	done     func(pos int, tl *Timeline)
	started  bool
	first    time.Duration // the first arrival
	last     time.Duration // the latest arrival added
	inFlight int
	finished bool
	// OnOutput, when set, is called before done with the output of each finished request that
	// asked for it (SimRequest.Output), as SimResult.Outputs holds it.
	OnOutput func(pos int, out Output)
	plans    map[int]*outPlan // pos → plan of the requests whose output is wanted
	backlog  backlog          // arrived, behind the waiting queue (simulation_backlog.go)
}

// NewSimulation starts a simulation of the engine cfg. done is called with each finished
// request's input index and timeline, in the order requests finish (by simulated time); the
// timeline is the caller's to keep. A nil done discards them.
func NewSimulation(cfg Config, done func(pos int, tl *Timeline)) (*Simulation, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	s := &Simulation{r: r, p: newPreparer(r), done: done}
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
	var w queued
	op, err := s.p.check(&w, pos, q)
	if err != nil {
		return err
	}
	if op != nil && q.Output {
		if s.plans == nil {
			s.plans = map[int]*outPlan{}
		}
		s.plans[pos] = op
	}
	s.feed(&w)
	return nil
}

// feed runs the engine until w's arrival and submits it, or puts it in the backlog behind a
// waiting queue long enough for the next step. Between calls the simulation rests just after
// completing the steps that ended at cl.now, with every arrival up to cl.now submitted or in
// the backlog: the point of SimulateCluster's loop where the next arrival decides what comes
// first.
func (s *Simulation) feed(w *queued) {
	cl := s.cl
	at := w.arrival
	if !s.started {
		s.started, s.first = true, at
		cl.now = at
		cl.advance()
	}
	for at > cl.now {
		s.planIdle()
		t, ok := cl.nextEvent()
		if !ok || at < t {
			t = at
		}
		cl.now = max(cl.now, t)
		cl.advance()
		s.drain()
	}
	s.last = at
	s.inFlight++
	c := cl.pools[0].c
	// No request reaching here is one core.submit would end at once for want of KV blocks
	// (check refuses it: the max model length is capped by the cache), so none waits in the
	// backlog to be ended later than its arrival.
	if s.backlog.len() > 0 || c.waiting.len() >= c.maxSeqs {
		s.backlog.push(w)
		return
	}
	s.submit(w)
}

// submit makes w into a sequence and queues it.
func (s *Simulation) submit(w *queued) {
	sq := &seq{}
	s.p.materialize(sq, &Timeline{}, w)
	emissionCap := sq.target
	if s.r.SpecK > 0 {
		emissionCap = emissionCap/2 + 1
	}
	sq.tl.Emissions = make([]Emission, 0, emissionCap)
	s.cl.submit(sq)
}

// planIdle starts a step on every idle pool that has work, first filling the waiting queue
// from the backlog: a step admits at most MaxNumSeqs requests, so a queue of that many gives
// it every choice it would have with the whole backlog queued.
func (s *Simulation) planIdle() {
	c := s.cl.pools[0].c
	var w queued
	for s.backlog.len() > 0 && c.waiting.len() < c.maxSeqs {
		s.backlog.pop(&w)
		s.submit(&w)
	}
	s.cl.planIdle()
}

// drain hands the requests finished since the last call to the done function.
func (s *Simulation) drain() {
	s.cl.drainDone(func(sq *seq) {
		s.inFlight--
		sq.hashes, sq.blocks = nil, nil
		if op, ok := s.plans[sq.pos]; ok {
			delete(s.plans, sq.pos)
			if s.OnOutput != nil {
				tl := sq.tl
				if op.ans == nil {
					op.reasoning = int(s.r.ReasoningFraction * float64(sq.target))
				}
				op.reasoning = min(op.reasoning, tl.OutputTokens)
				s.OnOutput(sq.pos, op.output(tl.OutputTokens, tl.FinishReason, true))
			}
		}
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
			s.planIdle()
			t, ok := cl.nextEvent()
			if !ok {
				if cl.pending() {
					return SimStats{}, fmt.Errorf("refengine: simulation stalled with %d running and %d waiting requests (KV cache of %d blocks too small?): %w",
						cl.running(), cl.waiting()+s.backlog.len(), r.numBlocks, ErrStalled)
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
		LoRALoads: st.LoRALoads, LoRAEvictions: st.LoRAEvictions, LoRALoadTime: st.LoRALoadTime,
	}
	if s.started {
		res.Makespan = cl.now - s.first
		res.EnergyJ, res.EnergyGPUs, res.EnergySource, res.EnergyKnown = simEnergy([]*cluster{cl}, r, s.first, cl.now)
	}
	return res, nil
}
