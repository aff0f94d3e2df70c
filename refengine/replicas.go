package refengine

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Routers are the request routers of a cluster of replicas (ClusterOptions.Router).
//
//   - round-robin sends request i (in arrival order) to replica i mod N.
//   - least-loaded sends a request to the replica with the fewest outstanding requests (routed
//     and not finished: waiting, running or in KV transfer), ties going to the first in
//     round-robin order from the next replica round-robin would pick.
//   - prefix-aware scores every replica as llm-d's inference scheduler does in its default
//     profile (a prefix-cache scorer of weight 3, a queue scorer and a KV-cache-utilization
//     scorer of weight 1 each, the highest total wins): the prefix score is the share of the
//     request's full prompt blocks found as a leading run on the replica (in its prefix cache,
//     or in the prompts of requests already routed there and not finished, whose blocks it is
//     about to compute: llm-d's precise scorer learns both from the engines' KV-cache events);
//     the queue score is (max − own) / (max − min) of the replicas' waiting requests (1 when
//     all are equal); the KV score is 1 − the share of KV blocks in use. A load-balance guard
//     in the manner of SGLang's cache-aware router keeps the prefix from piling requests onto
//     one replica: a replica with more than BalanceAbsThreshold outstanding requests above the
//     least-loaded one is not a candidate. When no candidate holds any of the prefix (or
//     prefix caching is off), the request goes to the least-loaded replica. Ties go as for
//     least-loaded.
var Routers = []string{RouterRoundRobin, RouterLeastLoaded, RouterPrefixAware}

// The router names.
const (
	RouterRoundRobin  = "round-robin"
	RouterLeastLoaded = "least-loaded"
	RouterPrefixAware = "prefix-aware"
)

// ErrTooLong is wrapped by Simulate's error when a request does not fit in the engine's
// context (the model's, capped by the KV cache); ErrStalled when the engine can make no
// progress with requests still queued.
var (
	ErrTooLong = errors.New("request longer than the max model length")
	ErrStalled = errors.New("simulation stalled")
)

// BalanceAbsThreshold is the prefix-aware router's load guard: a replica whose outstanding
// requests exceed the least-loaded replica's by more than this is passed over. 32 is SGLang's
// router default (balance_abs_threshold); its relative threshold, 1.0001 by default, is
// always met once the absolute one is, and is left out.
const BalanceAbsThreshold = 32

// llm-d's default scheduling profile weights.
const (
	prefixWeight = 3
	queueWeight  = 1
	kvWeight     = 1
)

// ClusterOptions configure SimulateCluster. The zero value is one engine.
type ClusterOptions struct {
	// Replicas is the number of independent engines, each the full Config (its GPUs, TP,
	// memory, pools); 0 means 1.
	Replicas int
	// Router routes each request at its arrival (one of Routers; "" is round-robin).
	Router string
	// OnFinish, when set, is called with each request's index in reqs and its timeline as soon
	// as the request finishes, in simulated-time order. It may drop the timeline's Emissions
	// (set them to nil) to bound memory. Returning false stops the simulation there: the
	// result is partial (ClusterResult.Stopped), later requests' timelines are not Done.
	OnFinish func(i int, tl *Timeline) bool
}

// ReplicaStats are one replica's share of a cluster simulation.
type ReplicaStats struct {
	Requests      int   `json:"requests"`
	PromptTokens  int64 `json:"prompt_tokens"`  // of the requests it admitted
	OutputTokens  int64 `json:"output_tokens"`  // it generated
	PrefixQueries int64 `json:"prefix_queries"` // prompt tokens looked up in its prefix cache
	PrefixHits    int64 `json:"prefix_hits"`    // of which found
	Preemptions   int64 `json:"preemptions"`
	Steps         int64 `json:"steps"`
	// BusyTime is the simulated time its pools spent in steps (summed over the pools of a
	// disaggregated replica).
	BusyTime time.Duration `json:"busy_ns"`
}

// ClusterResult is the outcome of SimulateCluster. Its SimResult covers the whole cluster
// (Stats summed over replicas; Stats.NumBlocks and Info are one replica's).
type ClusterResult struct {
	SimResult
	Router string
	// Replica is the replica each request was routed to, in input order (-1: never routed,
	// when the simulation stopped before it arrived).
	Replica  []int
	Replicas []ReplicaStats
	// Stopped is true when OnFinish ended the simulation early.
	Stopped bool
}

// SimulateCluster runs reqs through o.Replicas independent engines of cfg on one virtual
// timeline, routing each request at its arrival with o.Router. With one replica it is
// Simulate. Deterministic for a given input, Config and options; with Config.Noise each
// replica's pools draw their own step noise.
func SimulateCluster(reqs []SimRequest, cfg Config, o ClusterOptions) (*ClusterResult, error) {
	n, router, err := o.normalize()
	if err != nil {
		return nil, err
	}
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	res := &ClusterResult{SimResult: SimResult{Timelines: make([]Timeline, len(reqs)), Info: r.info(1)}, Router: router}
	seqs, plans, err := prepare(reqs, r, &res.SimResult)
	if err != nil {
		return nil, err
	}
	cr := newClusterRun(reqs, seqs, r, res, o.OnFinish, n)
	if err := cr.loop(); err != nil {
		return nil, err
	}
	for i := range seqs {
		seqs[i].hashes, seqs[i].blocks = nil, nil
	}
	fillOutputs(reqs, plans, seqs, r, &res.SimResult)
	cr.report()
	return res, nil
}

// normalize applies the defaults of the replica count and the router and validates them.
func (o ClusterOptions) normalize() (n int, router string, err error) {
	n = o.Replicas
	if n == 0 {
		n = 1
	}
	router = o.Router
	if router == "" {
		router = RouterRoundRobin
	}
	switch {
	case n < 1:
		return 0, "", fmt.Errorf("refengine: Replicas %d: must be >= 1", o.Replicas)
	case !slices.Contains(Routers, router):
		return 0, "", fmt.Errorf("refengine: Router %q: want one of %v", o.Router, Routers)
	}
	return n, router, nil
}

// add sums counters (maxima are the largest), as cluster.stats does over pools.
func (st *coreStats) add(s coreStats) {
	st.Steps += s.Steps
	st.BusyTime += s.BusyTime
	st.Preemptions += s.Preemptions
	st.PreemptedRequests += s.PreemptedRequests
	st.PrefixQueries += s.PrefixQueries
	st.PrefixHits += s.PrefixHits
	st.SpecPasses += s.SpecPasses
	st.SpecDraftTokens += s.SpecDraftTokens
	st.SpecAccepted += s.SpecAccepted
	for i, n := range s.SpecAcceptedPos {
		st.SpecAcceptedPos[i] += n
	}
	st.PromptTokens += s.PromptTokens
	st.GenerationTokens += s.GenerationTokens
	st.ComputedTokens += s.ComputedTokens
	st.FinishedRequests += s.FinishedRequests
	st.AbortedRequests += s.AbortedRequests
	st.MaxRunning = max(st.MaxRunning, s.MaxRunning)
	st.MaxBlocksUsed = max(st.MaxBlocksUsed, s.MaxBlocksUsed)
	st.PrefixEvictions += s.PrefixEvictions
	st.LoRALoads += s.LoRALoads
	st.LoRAEvictions += s.LoRAEvictions
	st.LoRALoadTime += s.LoRALoadTime
}

// routing is the router's state: the replicas and, for prefix-aware routing, the prompt blocks
// of the requests routed to each replica and not yet finished.
type routing struct {
	kind      string
	cls       []*cluster
	blockSize int
	inflight  []map[uint64]int32 // per replica: block hash -> routed, unfinished requests holding it
	held      [][]uint64         // per request: the hashes counted in inflight
}

func (rt *routing) hold(k int, hashes []uint64) {
	for _, h := range hashes {
		rt.inflight[k][h]++
	}
}

func (rt *routing) release(k int, hashes []uint64) {
	if k < 0 {
		return
	}
	m := rt.inflight[k]
	for _, h := range hashes {
		if m[h] <= 1 {
			delete(m, h)
		} else {
			m[h]--
		}
	}
}

// outstanding is a replica's routed, unfinished requests.
func outstanding(cl *cluster) int { return cl.running() + cl.waiting() }

// route picks the replica for s, the nth request in arrival order.
func (rt *routing) route(s *seq, nth int) int {
	n := len(rt.cls)
	start := nth % n
	if n == 1 || rt.kind == RouterRoundRobin {
		return start
	}
	least, minOut := start, outstanding(rt.cls[start])
	for j := 1; j < n; j++ {
		k := (start + j) % n
		if o := outstanding(rt.cls[k]); o < minOut {
			least, minOut = k, o
		}
	}
	if rt.kind == RouterLeastLoaded || rt.inflight == nil || len(s.hashes) == 0 {
		return least
	}
	// Prefix-aware: llm-d's weighted scores over the replicas the load guard leaves.
	maxBlocks := min(len(s.hashes), (s.promptTokens-1)/rt.blockSize)
	minQ, maxQ := -1, -1
	for _, cl := range rt.cls {
		q := cl.pools[0].c.waiting.len()
		if minQ < 0 || q < minQ {
			minQ = q
		}
		maxQ = max(maxQ, q)
	}
	best, bestScore, bestMatch := least, -1.0, 0
	for j := 0; j < n; j++ {
		k := (start + j) % n
		cl := rt.cls[k]
		if outstanding(cl) > minOut+BalanceAbsThreshold {
			continue
		}
		match := rt.prefixMatch(k, s.hashes[:maxBlocks])
		queue := 1.0
		if maxQ > minQ {
			queue = float64(maxQ-cl.pools[0].c.waiting.len()) / float64(maxQ-minQ)
		}
		pool := cl.pools[0].c.pool
		kv := 1 - float64(pool.used())/float64(pool.numBlocks())
		score := prefixWeight*float64(match)/float64(len(s.hashes)) + queueWeight*queue + kvWeight*kv
		if score > bestScore {
			best, bestScore = k, score
		}
		bestMatch = max(bestMatch, match)
	}
	if bestMatch == 0 {
		return least
	}
	return best
}

// prefixMatch is the number of leading blocks of hashes that replica k holds in its prefix
// cache or is computing for a request routed to it.
func (rt *routing) prefixMatch(k int, hashes []uint64) int {
	pool := rt.cls[k].pools[0].c.pool
	in := rt.inflight[k]
	for i, h := range hashes {
		if pool.holds(h) {
			continue
		}
		if in[h] > 0 {
			continue
		}
		return i
	}
	return len(hashes)
}
