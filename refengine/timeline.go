package refengine

import (
	"time"
)

// Emission is one delivery of output tokens: the engine step that ended at simulated offset At
// produced Tokens tokens for the request, sent as one SSE chunk.
type Emission struct {
	At     time.Duration
	Tokens int
}

// Timeline is the ground truth of one request: what the engine did with it and when. Offsets
// are simulated time from the engine's epoch; Wall converts any of them to wall-clock time.
type Timeline struct {
	// ID is the request's key: its X-Request-Id header when given, else the response id
	// (HTTP), or SimRequest.ID (Simulate).
	ID string
	// ResponseID is the id the engine put in its response ("cmpl-…", "chatcmpl-…"); empty in
	// Simulate.
	ResponseID string
	// Epoch is the wall time of offset 0 and Scale the number of simulated seconds per wall
	// second (TimeScale; 1 for a virtual clock, where wall time is Epoch + offset).
	Epoch time.Time
	Scale float64

	Arrival        time.Duration // the request reached the scheduler
	FirstScheduled time.Duration // first step that computed any of it; -1 if never
	Finish         time.Duration // last token emitted, or aborted; -1 while in flight
	Emissions      []Emission
	// Sent holds, for a streamed HTTP response, the simulated offset at which each emission's
	// chunk had been written and flushed to the connection (same order as Emissions; shorter
	// if the stream ended early). Sent[i] − Emissions[i].At is the engine's own delivery lag;
	// nil in Simulate and for non-streamed responses.
	Sent []time.Duration

	PromptTokens int
	OutputTokens int // emitted so far
	CachedTokens int // prompt tokens found in the prefix cache at first scheduling
	Preemptions  int
	// KVTransfer is the time the request's KV cache took to move from the prefill pool to the
	// decode pool (disaggregated mode only).
	KVTransfer time.Duration

	SpecPasses         int // speculative verification passes
	SpecDraftTokens    int // draft tokens verified
	SpecAcceptedTokens int // of which accepted

	// MaxTokens is the output length the engine generates for this request: max_tokens,
	// unless an early-eos fault picked a shorter one.
	MaxTokens int
	// OutputSeed is the word seed of the request's output: its text is
	// tokenizer.Text(OutputSeed, 0, OutputTokens).
	OutputSeed uint64
	// FinishReason is "length" (max_tokens reached), "stop" (early end of sequence injected by
	// a fault), "abort" (client went away) or "" while in flight.
	FinishReason string
	Done         bool
}

// Wall returns the wall-clock time of simulated offset d: Epoch + d/Scale. For the HTTP
// engine this is when the engine's schedule reached d; a chunk is written to the connection
// at or shortly after the Wall time of its emission, never before.
func (t *Timeline) Wall(d time.Duration) time.Time {
	if t.Scale <= 0 || t.Scale == 1 {
		return t.Epoch.Add(d)
	}
	return t.Epoch.Add(time.Duration(float64(d) / t.Scale))
}

// TTFT is the simulated time from arrival to the first emission (0 if none yet).
func (t *Timeline) TTFT() time.Duration {
	if len(t.Emissions) == 0 {
		return 0
	}
	return t.Emissions[0].At - t.Arrival
}

// E2E is the simulated time from arrival to finish (0 while in flight).
func (t *Timeline) E2E() time.Duration {
	if !t.Done {
		return 0
	}
	return t.Finish - t.Arrival
}

func (t *Timeline) finishReasonFor() string {
	if t.OutputTokens < t.MaxTokens {
		return "stop"
	}
	return "length"
}

// clone returns a deep copy that the caller may keep.
func (t *Timeline) clone() Timeline {
	c := *t
	c.Emissions = append([]Emission(nil), t.Emissions...)
	c.Sent = append([]time.Duration(nil), t.Sent...)
	return c
}

// timelineStore keeps the timelines of in-flight requests and of the last cap finished ones.
type timelineStore struct {
	cap    int
	byID   map[string]*Timeline
	ring   []*Timeline // finished timelines, oldest first (circular)
	next   int
	filled bool
}

func newTimelineStore(capacity int) *timelineStore {
	return &timelineStore{cap: capacity, byID: make(map[string]*Timeline), ring: make([]*Timeline, max(capacity, 0))}
}

func (s *timelineStore) add(t *Timeline) { s.byID[t.ID] = t }

// finished records that t finished, evicting the oldest finished timeline beyond the capacity.
func (s *timelineStore) finished(t *Timeline) {
	if s.cap <= 0 {
		if s.byID[t.ID] == t {
			delete(s.byID, t.ID)
		}
		return
	}
	if old := s.ring[s.next]; s.filled && old != nil && s.byID[old.ID] == old {
		delete(s.byID, old.ID)
	}
	s.ring[s.next] = t
	s.next++
	if s.next == s.cap {
		s.next, s.filled = 0, true
	}
}

func (s *timelineStore) get(id string) (*Timeline, bool) {
	t, ok := s.byID[id]
	return t, ok
}
