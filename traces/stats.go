package traces

import (
	"math"
	"sort"
)

// DefaultBlockTokens is the number of prompt tokens one hash_ids entry stands for unless a run
// says otherwise (Mooncake's traces use 512-token blocks).
const DefaultBlockTokens = 512

// Stats characterizes a trace: what was sent, so that a reader of results can see the workload
// next to the latencies. It goes into every run's summary.json under "workload".
type Stats struct {
	// Count is the number of requests.
	Count int `json:"count"`
	// DurationS is the span from the first to the last arrival, in seconds.
	DurationS float64 `json:"duration_s"`
	// RatePerS is the mean arrival rate, (Count-1)/DurationS: the inverse of the mean
	// inter-arrival gap (0 with fewer than two requests or a zero span).
	RatePerS float64 `json:"rate_per_s"`
	// Burstiness is the coefficient of variation (population standard deviation / mean) of the
	// inter-arrival gaps: 0 for constant spacing, about 1 for Poisson, above 1 for bursty traffic.
	Burstiness float64 `json:"burstiness"`
	// InputTokens and OutputTokens describe the per-request length distributions.
	InputTokens  LengthStats `json:"input_tokens"`
	OutputTokens LengthStats `json:"output_tokens"`
	// TotalInputTokens and TotalOutputTokens are the sums over all requests.
	TotalInputTokens  int64 `json:"total_input_tokens"`
	TotalOutputTokens int64 `json:"total_output_tokens"`
	// PrefillDecodeRatio is TotalInputTokens / TotalOutputTokens.
	PrefillDecodeRatio float64 `json:"prefill_decode_ratio"`
	// Classes counts requests per class tag; requests without a class are counted under
	// "(none)" when the trace has any tagged request, and the map is empty otherwise.
	Classes map[string]int `json:"classes"`
	// PrefixReuseTokens is the number of input tokens that an unbounded prefix cache would
	// already hold when the request arrives: tokens of leading hash_ids blocks whose whole
	// prefix chain was sent before (see FORMAT.md), with BlockTokens tokens per block.
	PrefixReuseTokens int64 `json:"prefix_reuse_tokens"`
	// PrefixReuse is PrefixReuseTokens / TotalInputTokens.
	PrefixReuse float64 `json:"prefix_reuse"`
	// BlockTokens is the block size used for prefix reuse.
	BlockTokens int `json:"block_tokens"`
	// Sessions is the number of distinct sessions; MaxTurn the highest turn number.
	Sessions int `json:"sessions"`
	MaxTurn  int `json:"max_turn,omitempty"`
	// Chat counts requests that carry messages, WithPrompt those that carry prompt text; the
	// rest have token counts only and get synthesized prompts.
	Chat       int `json:"chat"`
	WithPrompt int `json:"with_prompt"`
}

// LengthStats summarizes a token-length distribution. Percentiles use the nearest-rank method:
// the p-th percentile is the smallest value with at least p% of the values at or below it.
type LengthStats struct {
	Min  int     `json:"min"`
	Mean float64 `json:"mean"`
	P50  int     `json:"p50"`
	P90  int     `json:"p90"`
	P99  int     `json:"p99"`
	Max  int     `json:"max"`
}

// ComputeStats computes Stats with DefaultBlockTokens per hash_ids block.
func ComputeStats(reqs []Request) Stats { return ComputeStatsBlocks(reqs, DefaultBlockTokens) }

// ComputeStatsBlocks computes Stats with blockTokens tokens per hash_ids block (<= 0 means
// DefaultBlockTokens). The requests need not be sorted.
func ComputeStatsBlocks(reqs []Request, blockTokens int) Stats {
	if blockTokens <= 0 {
		blockTokens = DefaultBlockTokens
	}
	s := Stats{Count: len(reqs), Classes: map[string]int{}, BlockTokens: blockTokens}
	if len(reqs) == 0 {
		return s
	}
	sorted := make([]Request, len(reqs))
	copy(sorted, reqs)
	SortByArrival(sorted)

	span := sorted[len(sorted)-1].Arrival - sorted[0].Arrival
	s.DurationS = span.Seconds()
	if len(sorted) > 1 && span > 0 {
		s.RatePerS = float64(len(sorted)-1) / s.DurationS
		gaps := make([]float64, len(sorted)-1)
		for i := 1; i < len(sorted); i++ {
			gaps[i-1] = (sorted[i].Arrival - sorted[i-1].Arrival).Seconds()
		}
		mean, sd := meanSD(gaps)
		if mean > 0 {
			s.Burstiness = sd / mean
		}
	}

	in := make([]int, len(sorted))
	out := make([]int, len(sorted))
	sessions := map[string]bool{}
	tagged := false
	for i := range sorted {
		r := &sorted[i]
		in[i], out[i] = r.InputTokens, r.OutputTokens
		s.TotalInputTokens += int64(r.InputTokens)
		s.TotalOutputTokens += int64(r.OutputTokens)
		if r.Class != "" {
			tagged = true
		}
		if r.Session != "" {
			sessions[r.Session] = true
		}
		if r.Turn > s.MaxTurn {
			s.MaxTurn = r.Turn
		}
		if len(r.Messages) > 0 {
			s.Chat++
		}
		if r.Prompt != "" {
			s.WithPrompt++
		}
	}
	if tagged {
		for i := range sorted {
			c := sorted[i].Class
			if c == "" {
				c = "(none)"
			}
			s.Classes[c]++
		}
	}
	s.Sessions = len(sessions)
	s.InputTokens = lengthStats(in)
	s.OutputTokens = lengthStats(out)
	if s.TotalOutputTokens > 0 {
		s.PrefillDecodeRatio = float64(s.TotalInputTokens) / float64(s.TotalOutputTokens)
	}
	s.PrefixReuseTokens = prefixReuse(sorted, blockTokens)
	if s.TotalInputTokens > 0 {
		s.PrefixReuse = float64(s.PrefixReuseTokens) / float64(s.TotalInputTokens)
	}
	return s
}

// prefixReuse counts, in arrival order, the input tokens of each request that an unbounded
// prefix cache would already hold. Block k of a request covers tokens [k*B, min((k+1)*B,
// input)); it is identified by the chain of hash ids 0..k. A block hits for as many tokens as an
// earlier request covered of that same chain; the walk stops at the first block not fully hit.
func prefixReuse(sorted []Request, blockTokens int) int64 {
	type chainKey struct {
		parent int // index of the parent chain, -1 at the root
		id     int64
	}
	chains := map[chainKey]int{} // chain -> index into covered
	var covered []int            // tokens of the block seen so far, per chain
	var reused int64
	for i := range sorted {
		r := &sorted[i]
		parent := -1
		hitting := true
		for k, id := range r.HashIDs {
			start := k * blockTokens
			if start >= r.InputTokens {
				break
			}
			n := min(blockTokens, r.InputTokens-start)
			key := chainKey{parent, id}
			idx, ok := chains[key]
			if !ok {
				idx = len(covered)
				covered = append(covered, 0)
				chains[key] = idx
			}
			if hitting {
				hit := min(n, covered[idx])
				reused += int64(hit)
				if hit < n {
					hitting = false
				}
			}
			covered[idx] = max(covered[idx], n)
			parent = idx
		}
	}
	return reused
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)))
}

func lengthStats(v []int) LengthStats {
	if len(v) == 0 {
		return LengthStats{}
	}
	s := append([]int(nil), v...)
	sort.Ints(s)
	var sum float64
	for _, x := range s {
		sum += float64(x)
	}
	return LengthStats{
		Min: s[0], Max: s[len(s)-1], Mean: sum / float64(len(s)),
		P50: nearestRank(s, 50), P90: nearestRank(s, 90), P99: nearestRank(s, 99),
	}
}

// nearestRank returns the p-th percentile of sorted s by the nearest-rank method.
func nearestRank(s []int, p float64) int {
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	return s[rank-1]
}
