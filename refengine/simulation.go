package refengine

import (
	"fmt"
	"time"
)

// Simulation is Simulate fed one request at a time, in arrival order, as a trace is read or as
// earlier requests release later ones (a session's next turn, RunUntil): each request's
// timeline is handed to the done function when the request finishes and is then released, so
// memory grows with the requests in flight, not with the trace. For the same requests, Add in
// arrival order (input order among equal arrivals, with pos the input index) gives exactly
// Simulate's timelines. It is one engine (Simulate's one-replica case of SimulateCluster).
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
	sq := &seq{tl: &Timeline{}}
	op, err := s.p.prepareOne(sq, sq.tl, pos, q)
	if err != nil {
		return err
	}
	if op != nil && q.Output {
		if s.plans == nil {
			s.plans = map[int]*outPlan{}
		}
		s.plans[pos] = op
	}
	s.feed(sq)
	return nil
}

// feed runs the engine until sq's arrival and submits it. Between calls the simulation rests
// just after completing the steps that ended at cl.now, with every arrival up to cl.now
// submitted: the point of SimulateCluster's loop where the next arrival decides what comes
// first.
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
			cl.planIdle()
			t, ok := cl.nextEvent()
			if !ok {
				if cl.pending() {
					return SimStats{}, fmt.Errorf("refengine: simulation stalled with %d running and %d waiting requests (KV cache of %d blocks too small?): %w",
						cl.running(), cl.waiting(), r.numBlocks, ErrStalled)
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
