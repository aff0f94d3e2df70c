package traces

import (
	"math"
	"sort"
	"time"
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

	// Multimodal requests (images.go): WithImages counts requests whose messages carry
	// images, Images the images in all.
	WithImages int `json:"with_images,omitempty"`
	Images     int `json:"images,omitempty"`
	// Agentic describes the shape of agentic sessions; present when a request has after,
	// tool_delay_s or affinity.
	Agentic *AgenticStats `json:"agentic,omitempty"`

	// Cancellations (cancel.go): WithCancel counts the requests that carry cancel_after_ms.
	WithCancel int `json:"with_cancel,omitempty"`
}

// AgenticStats is the shape of a trace's sessions: how many turns, how much fan-out to
// sub-agents and joining, and the tool delays.
type AgenticStats struct {
	// TurnsPerSession is the distribution of the number of turns per session.
	TurnsPerSession LengthStats `json:"turns_per_session"`
	// FanOut is the distribution, over turns that other turns wait for, of how many wait for
	// each; FanOutTurns counts the turns that two or more wait for (a fan-out to sub-agents),
	// JoinTurns the turns that wait for two or more.
	FanOut      LengthStats `json:"fan_out"`
	FanOutTurns int         `json:"fan_out_turns"`
	JoinTurns   int         `json:"join_turns"`
	// ToolDelayMs is the distribution of the tool delays of the turns that have one (Count of
	// them), in ms.
	ToolDelayMs DelayStats `json:"tool_delay_ms"`
	// WithAffinity counts the requests that carry an explicit affinity key.
	WithAffinity int `json:"with_affinity"`
}

// DelayStats summarizes a distribution of delays in ms (percentiles by nearest rank, to the µs).
type DelayStats struct {
	Count int     `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// agenticBuilder accumulates AgenticStats.
type agenticBuilder struct {
	any        bool
	turns      map[string]int
	dependents map[sessionTurn]int // explicit after edges, per depended-on turn
	prevTurn   map[string]int      // implicit edges: the highest turn seen per session
	joins      int
	toolUs     map[int]int
	tools      int
	affinity   int
}

type sessionTurn struct {
	session string
	turn    int
}

func (a *agenticBuilder) add(r *Request) {
	if r.Session == "" {
		return
	}
	if a.turns == nil {
		a.turns, a.dependents, a.prevTurn, a.toolUs = map[string]int{}, map[sessionTurn]int{}, map[string]int{}, map[int]int{}
	}
	a.turns[r.Session]++
	if r.After != nil || r.ToolDelay > 0 || r.Affinity != "" {
		a.any = true
	}
	switch {
	case r.After != nil:
		for _, t := range r.After {
			a.dependents[sessionTurn{r.Session, t}]++
		}
		if len(r.After) > 1 {
			a.joins++
		}
	case r.Turn > 1:
		a.dependents[sessionTurn{r.Session, r.Turn - 1}]++
	}
	if r.ToolDelay > 0 {
		a.tools++
		a.toolUs[int(r.ToolDelay/time.Microsecond)]++
	}
	if r.Affinity != "" {
		a.affinity++
	}
}

func (a *agenticBuilder) stats() *AgenticStats {
	if !a.any {
		return nil
	}
	per := map[int]int{}
	for _, n := range a.turns {
		per[n]++
	}
	fan := map[int]int{}
	fanTurns := 0
	for _, n := range a.dependents {
		fan[n]++
		if n >= 2 {
			fanTurns++
		}
	}
	st := &AgenticStats{TurnsPerSession: lengthStats(per, len(a.turns)), FanOut: lengthStats(fan, len(a.dependents)),
		FanOutTurns: fanTurns, JoinTurns: a.joins, WithAffinity: a.affinity}
	if a.tools > 0 {
		l := lengthStats(a.toolUs, a.tools)
		st.ToolDelayMs = DelayStats{Count: a.tools, Min: float64(l.Min) / 1e3, Mean: l.Mean / 1e3, P50: float64(l.P50) / 1e3,
			P90: float64(l.P90) / 1e3, P99: float64(l.P99) / 1e3, Max: float64(l.Max) / 1e3}
	}
	return st
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
	order := make([]int32, len(reqs))
	for i := range order {
		order[i] = int32(i)
	}
	sort.SliceStable(order, func(a, b int) bool { return reqs[order[a]].Arrival < reqs[order[b]].Arrival })
	b := NewStatsBuilder(blockTokens)
	for _, i := range order {
		b.Add(&reqs[i])
	}
	return b.Stats()
}

// StatsBuilder computes Stats one request at a time, in arrival order, in memory that grows
// with the number of distinct lengths, classes, sessions and prefix blocks rather than with the
// number of requests: a trace too large to hold can be described while it is read.
type StatsBuilder struct {
	s           Stats
	first, prev time.Duration
	gapMean     float64 // running mean and sum of squared deviations of the gaps (Welford)
	gapM2       float64
	in, out     map[int]int // length -> count
	classes     map[string]int
	sessions    map[string]struct{}
	prefix      prefixCache
	agentic     agenticBuilder
}

// NewStatsBuilder starts Stats with blockTokens tokens per hash_ids block (<= 0 means
// DefaultBlockTokens).
func NewStatsBuilder(blockTokens int) *StatsBuilder {
	if blockTokens <= 0 {
		blockTokens = DefaultBlockTokens
	}
	return &StatsBuilder{
		s:  Stats{Classes: map[string]int{}, BlockTokens: blockTokens},
		in: map[int]int{}, out: map[int]int{}, classes: map[string]int{}, sessions: map[string]struct{}{},
		prefix: prefixCache{chains: map[chainKey]int{}, blockTokens: blockTokens},
	}
}

// Add counts r, which must not arrive before the request added last.
func (b *StatsBuilder) Add(r *Request) {
	s := &b.s
	if s.Count == 0 {
		b.first = r.Arrival
	} else {
		gap := (r.Arrival - b.prev).Seconds()
		n := float64(s.Count) // gaps so far, this one included
		d := gap - b.gapMean
		b.gapMean += d / n
		b.gapM2 += d * (gap - b.gapMean)
	}
	b.prev = r.Arrival
	s.Count++
	b.in[r.InputTokens]++
	b.out[r.OutputTokens]++
	s.TotalInputTokens += int64(r.InputTokens)
	s.TotalOutputTokens += int64(r.OutputTokens)
	b.classes[r.Class]++
	if r.Session != "" {
		b.sessions[r.Session] = struct{}{}
	}
	if r.Turn > s.MaxTurn {
		s.MaxTurn = r.Turn
	}
	if r.CancelAfter > 0 {
		s.WithCancel++
	}
	if n := r.ImageCount(); n > 0 {
		b.s.WithImages++
		b.s.Images += n
	}
	if len(r.Messages) > 0 {
		s.Chat++
	}
	if r.Prompt != "" {
		s.WithPrompt++
	}
	s.PrefixReuseTokens += b.prefix.add(r)
	b.agentic.add(r)
}

// Stats returns the statistics of the requests added so far.
func (b *StatsBuilder) Stats() Stats {
	s := b.s
	s.Classes = map[string]int{}
	if s.Count == 0 {
		return s
	}
	span := b.prev - b.first
	s.DurationS = span.Seconds()
	if s.Count > 1 && span > 0 {
		s.RatePerS = float64(s.Count-1) / s.DurationS
		if b.gapMean > 0 {
			s.Burstiness = math.Sqrt(b.gapM2/float64(s.Count-1)) / b.gapMean
		}
	}
	if len(b.classes) > 1 || b.classes[""] == 0 {
		for c, n := range b.classes {
			if c == "" {
				c = "(none)"
			}
			s.Classes[c] = n
		}
	}
	s.Sessions = len(b.sessions)
	s.Agentic = b.agentic.stats()
	s.InputTokens = lengthStats(b.in, s.Count)
	s.OutputTokens = lengthStats(b.out, s.Count)
	if s.TotalOutputTokens > 0 {
		s.PrefillDecodeRatio = float64(s.TotalInputTokens) / float64(s.TotalOutputTokens)
	}
	if s.TotalInputTokens > 0 {
		s.PrefixReuse = float64(s.PrefixReuseTokens) / float64(s.TotalInputTokens)
	}
	return s
}

type chainKey struct {
	parent int // index of the parent chain, -1 at the root
	id     int64
}

// prefixCache counts, in arrival order, the input tokens of each request that an unbounded
// prefix cache would already hold. Block k of a request covers tokens [k*B, min((k+1)*B,
// input)); it is identified by the chain of hash ids 0..k. A block hits for as many tokens as an
// earlier request covered of that same chain; the walk stops at the first block not fully hit.
type prefixCache struct {
	chains      map[chainKey]int // chain -> index into covered
	covered     []int            // tokens of the block seen so far, per chain
	blockTokens int
}

func (c *prefixCache) add(r *Request) int64 {
	var reused int64
	parent := -1
	hitting := true
	for k, id := range r.HashIDs {
		start := k * c.blockTokens
		if start >= r.InputTokens {
			break
		}
		n := min(c.blockTokens, r.InputTokens-start)
		key := chainKey{parent, id}
		idx, ok := c.chains[key]
		if !ok {
			idx = len(c.covered)
			c.covered = append(c.covered, 0)
			c.chains[key] = idx
		}
		if hitting {
			hit := min(n, c.covered[idx])
			reused += int64(hit)
			if hit < n {
				hitting = false
			}
		}
		c.covered[idx] = max(c.covered[idx], n)
		parent = idx
	}
	return reused
}

// lengthStats summarizes a distribution given as value -> count over n values.
func lengthStats(counts map[int]int, n int) LengthStats {
	if n == 0 {
		return LengthStats{}
	}
	vals := make([]int, 0, len(counts))
	var sum float64
	for v, c := range counts {
		vals = append(vals, v)
		sum += float64(v) * float64(c)
	}
	sort.Ints(vals)
	// rank(p) is the nearest-rank position: the smallest value with at least p% of the values
	// at or below it.
	at := func(p float64) int {
		rank := max(int(math.Ceil(p/100*float64(n))), 1)
		seen := 0
		for _, v := range vals {
			seen += counts[v]
			if seen >= rank {
				return v
			}
		}
		return vals[len(vals)-1]
	}
	return LengthStats{
		Min: vals[0], Max: vals[len(vals)-1], Mean: sum / float64(n),
		P50: at(50), P90: at(90), P99: at(99),
	}
}
