package refengine

import "time"

// Session-aware simulation (docs/ARCHITECTURE.md "Agentic sessions"): a caller that releases
// requests when others finish (a session's next turn, a join of sub-agents) cannot know their
// arrivals in advance. RunUntil lets it step the engine finish by finish and Add what each
// completion releases before the engine runs past it.

// RunUntil runs the engine toward time at, handing every request that finishes to the done
// function, and stops just after the first step in which any request finished, so that the
// requests those completions release can still be added at their times. It returns the time the
// engine reached: at, or earlier when a request finished (then the requests added next must
// arrive no earlier than it). With nothing in flight, or before the first Add, it returns at
// without running.
func (s *Simulation) RunUntil(at time.Duration) time.Duration {
	cl := s.cl
	if !s.started || s.finished {
		return at
	}
	for at > cl.now {
		s.planIdle()
		t, ok := cl.nextEvent()
		if !ok {
			return at
		}
		if at < t {
			t = at
		}
		cl.now = max(cl.now, t)
		cl.advance()
		before := s.inFlight
		s.drain()
		if s.inFlight < before {
			return cl.now
		}
	}
	return max(at, cl.now)
}
