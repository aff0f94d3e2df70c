package refengine

import (
	"fmt"
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
func Simulate(reqs []SimRequest, cfg Config) (*SimResult, error) {
	res, err := SimulateCluster(reqs, cfg, ClusterOptions{})
	if err != nil {
		return nil, err
	}
	return &res.SimResult, nil
}

// prepare checks reqs against the resolved engine and builds their sequences and timelines.
func prepare(reqs []SimRequest, r *resolved, res *SimResult) ([]seq, error) {
	seqs := make([]seq, len(reqs))
	epoch := time.Unix(0, 0).UTC()
	var tok tokenizer.Reference
	for i := range reqs {
		q := &reqs[i]
		if q.Arrival < 0 {
			return nil, fmt.Errorf("refengine: request %d (%s): arrival %v is negative", i, q.ID, q.Arrival)
		}
		var ids []int
		promptTokens := q.PromptTokens
		var promptHash uint64
		if q.Prompt != "" {
			ids = tok.Encode(q.Prompt)
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
			return nil, fmt.Errorf("refengine: request %d (%s): the prompt is empty; give Prompt or PromptTokens >= 1", i, q.ID)
		case q.MaxTokens < 1:
			return nil, fmt.Errorf("refengine: request %d (%s): MaxTokens %d must be >= 1", i, q.ID, q.MaxTokens)
		case promptTokens > r.maxModelLen || q.MaxTokens > r.maxModelLen-promptTokens: // no sum: it could wrap
			return nil, fmt.Errorf("refengine: request %d (%s): %d prompt + %d output tokens exceed the max model length %d (the model's context, capped by the KV cache); shorten it or give more KV memory: %w",
				i, q.ID, promptTokens, q.MaxTokens, r.maxModelLen, ErrTooLong)
		case q.MinTokens < 0 || q.MinTokens > q.MaxTokens:
			return nil, fmt.Errorf("refengine: request %d (%s): MinTokens %d must be between 0 and MaxTokens %d", i, q.ID, q.MinTokens, q.MaxTokens)
		}
		target := q.MaxTokens
		if r.Faults.EarlyEOS > 0 {
			plan := r.Faults.plan(hashString(fnvOffset, q.ID), q.Arrival)
			target = plan.target(q.MaxTokens, q.MinTokens, q.IgnoreEOS)
		}
		tl := &res.Timelines[i]
		*tl = Timeline{ID: q.ID, Epoch: epoch, Scale: 1, Arrival: q.Arrival, FirstScheduled: -1, Finish: -1,
			PromptTokens: promptTokens, MaxTokens: q.MaxTokens,
			OutputSeed: outputBase(promptHash, q.Temperature, q.Seed, tokenizer.Mix(r.Seed^tokenizer.Mix(uint64(i))))}
		s := &seqs[i]
		s.tl = tl
		s.promptTokens = promptTokens
		s.target = target
		if !r.DisablePrefixCaching {
			s.hashes = blockHashes(ids, q.HashIDs, promptTokens, r.BlockSize, r.HashIDTokens, promptHash)
		}
		seed := promptHash
		if q.Seed != nil {
			seed = uint64(*q.Seed)
		}
		s.rng = tokenizer.Mix(seed ^ 0x5eed5eed5eed5eed)
	}
	return seqs, nil
}
