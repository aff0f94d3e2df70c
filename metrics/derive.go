package metrics

import (
	"math"
	"slices"
	"time"
)

// Per-request definitions (all times in ns from the run epoch):
//
//	TTFT       = FirstToken - Intended  (from the intended send time: no coordinated omission)
//	E2E        = End - Intended
//	queue      = Sent - Dispatched      (waiting for a concurrency slot)
//	lag        = Dispatched - Intended  (the client's own scheduling delay)
//	TPOT       = (E2E - TTFT) / (OutputTokens - 1), for requests with at least 2 tokens (vLLM)
//	chunk gap  = Chunks[i].T - Chunks[i-1].T
//	ITL/token  = per token: the first chunk of k tokens contributes k-1 zeros; every later
//	             chunk of k tokens contributes its gap, then k-1 zeros (its other tokens arrived
//	             with it). So a request has sum(k)-1 per-token samples.
//	ITL/chunk  = every chunk gap.
//	max gap    = the largest chunk gap of a request (requests with at least 2 chunks).
//	burst      = a maximal run of chunks each within BurstWindow of the one before: what one
//	             engine pass (a speculative verification, or a plain decode step) delivered,
//	             whether the wire sent its k tokens as one chunk or as k events.
//	ITL/burst  = the gap from a burst's last chunk to the next burst's first chunk.
//	tokens per burst = the tokens of one burst.
//	normalized = E2E / OutputTokens (hides stalls; shown because others report it).
//
// A chunk that claims fewer than 1 token is counted as 1 for timing.

// BurstWindow groups chunks into bursts: a chunk that arrives at most 1 ms after the previous
// one belongs to the same burst. A server that streams each token of a speculative pass as
// its own event (llama.cpp, TGI) writes them back to back, and the client reads them
// microseconds apart (tens of µs through the kernel's TCP stack), while one engine pass takes
// milliseconds: reading an 8B model's 16 GB of bf16 weights once is 3.3 ms at an H200's
// 4.8 TB/s, and the reference engine's shortest step is several ms. A millisecond sits an
// order of magnitude from either. An engine whose passes take under a millisecond (a tiny
// model) has its passes merged into one burst; its per-chunk ITL still shows them.
const BurstWindow = time.Millisecond

// chunkTokens is a chunk's token count for timing purposes.
func chunkTokens(c Chunk) int64 {
	if c.Tokens < 1 {
		return 1
	}
	return int64(c.Tokens)
}

// tpotNs returns vLLM's TPOT and whether it is defined.
func tpotNs(r *Record) (int64, bool) {
	if r.OutputTokens < 2 || r.FirstToken <= 0 || r.End <= 0 {
		return 0, false
	}
	return (r.End - r.FirstToken) / int64(r.OutputTokens-1), true
}

// maxGapNs returns the largest chunk gap and whether the request has two chunks or more.
func maxGapNs(chunks []Chunk) (int64, bool) {
	if len(chunks) < 2 {
		return 0, false
	}
	var m int64
	for i := 1; i < len(chunks); i++ {
		if g := chunks[i].T - chunks[i-1].T; g > m {
			m = g
		}
	}
	return m, true
}

// itlP99Ns is the 99th percentile (nearest rank) of a request's per-token ITL samples. scratch
// is reused to avoid an allocation per request; the grown slice is returned.
func itlP99Ns(chunks []Chunk, scratch []int64) (int64, bool, []int64) {
	if len(chunks) == 0 {
		return 0, false, scratch
	}
	scratch = scratch[:0]
	var total int64
	for i, c := range chunks {
		total += chunkTokens(c)
		if i > 0 {
			scratch = append(scratch, c.T-chunks[i-1].T)
		}
	}
	n := total - 1
	if n < 1 {
		return 0, false, scratch
	}
	zeros := n - int64(len(scratch))
	rank := int64(math.Ceil(0.99 * float64(n)))
	if rank < 1 {
		rank = 1
	}
	if rank <= zeros {
		return 0, true, scratch
	}
	slices.Sort(scratch)
	return scratch[rank-zeros-1], true, scratch
}

// stallStats counts the gaps between bursts of one request longer than threshold, and the time
// spent in them (the whole gap). A gap inside a burst (at most BurstWindow) is never a stall, so
// a threshold above BurstWindow counts the same gaps on chunks and on bursts.
func stallStats(chunks []Chunk, threshold int64) (count, stalled int64) {
	if threshold <= 0 {
		return 0, 0
	}
	for i := 1; i < len(chunks); i++ {
		if g := chunks[i].T - chunks[i-1].T; g > threshold && burstGap(g) {
			count++
			stalled += g
		}
	}
	return count, stalled
}

// fluidityDeadlines are Metron's deadlines for one request.
type fluidityDeadlines struct {
	ttft time.Duration // fixed part of the first-token deadline
	rate float64       // prompt tokens per second added to it (<= 0: none)
	tbt  time.Duration // deadline between tokens
}

func (o *Options) deadlines() fluidityDeadlines {
	return fluidityDeadlines{ttft: o.FluidityTTFT, rate: o.FluidityPrefillRate, tbt: o.FluidityTBT}
}

// ttftDeadline is the first-token deadline of a request with the given prompt length.
func (d fluidityDeadlines) ttftDeadline(inputTokens int) int64 {
	dl := int64(d.ttft)
	if d.rate > 0 && inputTokens > 0 {
		dl += int64(float64(inputTokens) / d.rate * float64(time.Second))
	}
	return dl
}

// fluidityIndex computes Metron's fluidity-index of one request:
//
//   - every generated token has a deadline; the first token's is Intended + the TTFT deadline
//     (which grows with the prompt length), token i's is the previous deadline + TBT;
//   - a token that arrives early leaves its slack in place: later deadlines stay where the
//     schedule put them, so early delivery buffers a later delay;
//   - a token that arrives after its deadline is a miss: it counts floor(gap / TBT) missed
//     deadlines, where gap is the time since the previous token (at least 1; a late first
//     token counts 1), and the schedule restarts from that token (slack reset);
//   - tokens of one chunk arrive together;
//   - index = 1 - missed / tokens, clamped to [0, 1].
//
// It returns false when the request has no tokens.
func fluidityIndex(r *Record, d fluidityDeadlines) (float64, bool) {
	if len(r.Chunks) == 0 || d.tbt <= 0 {
		return 0, false
	}
	tbt := int64(d.tbt)
	deadline := r.Intended + d.ttftDeadline(r.InputTokens)
	var tokens, missed int64
	prev := r.Intended
	first := true
	for _, c := range r.Chunks {
		k := chunkTokens(c)
		if k <= 0 {
			continue
		}
		// The chunk's first token: it may miss its deadline.
		if !first {
			deadline += tbt
		}
		t := c.T
		if t > deadline {
			if first {
				missed++
			} else {
				n := (t - prev) / tbt
				if n < 1 {
					n = 1
				}
				missed += n
			}
			deadline = t
		}
		prev = t
		first = false
		tokens++
		// The other k-1 tokens arrive with it; each later deadline lies after t, so none of
		// them misses. Advancing in one step keeps this O(1) per chunk whatever a server
		// claims a chunk carried.
		deadline += (k - 1) * tbt
		tokens += k - 1
	}
	if tokens == 0 {
		return 0, false
	}
	idx := 1 - float64(missed)/float64(tokens)
	if idx < 0 {
		idx = 0
	}
	return idx, true
}
