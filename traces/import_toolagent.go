package traces

import (
	"io"
	"math"
	"sort"
	"strconv"
	"time"
)

// Mooncake toolagent: the FAST'25 "tool and agent" trace (traces/toolagent_trace.jsonl of the
// Mooncake release) has the rows of every Mooncake trace (timestamp in ms, input_length,
// output_length, hash_ids of 512-token blocks) and no session ids. The importer reads the rows
// as "mooncake" does and rebuilds the agents' sessions from the hash_ids chains
// (FORMAT.md "Mooncake toolagent sessions" is the reference):
//
//   - A request B continues an earlier request A (arrived strictly before B) when B's hash_ids
//     start with every full block of A — all of A's ids, except the last when A's input_length
//     is not a multiple of 512 (a partial block changes as soon as the context grows) — A has at
//     least one full block, and B's input holds A's prompt and reply
//     (input_length(B) >= input_length(A) + output_length(A)).
//   - Of several such A, B continues the one with the most full blocks (the most specific
//     context), then the one with the longest run of equal ids (its partial last block too),
//     then the latest.
//   - A request that continues none starts a session; the others join the session of the request
//     they continue, with "after" naming it. An A continued by several requests fans out to
//     them (sub-agents, or parallel tool calls); reconstructed sessions are trees, with no joins.
//   - The gap between A's and B's arrivals is A's response time plus the agent's own time; the
//     response time is estimated as output_length(A) × ImportOptions.TPOT, and the rest
//     (floored at 0) is B's tool_delay_s. B keeps its recorded arrival_s.

// DefaultImportTPOT is the time per output token with which the toolagent importer estimates a
// recorded response's duration (30 ms: a loaded serving engine's decode step).
const DefaultImportTPOT = 30 * time.Millisecond

func importToolAgent(r io.Reader, name string, opts ImportOptions) ([]Request, error) {
	if opts.TPOT < 0 {
		return nil, &LineError{File: name, Field: "tpot", Reason: "must be >= 0"}
	}
	if opts.TPOT == 0 {
		opts.TPOT = DefaultImportTPOT
	}
	reqs, err := importMooncake(r, name, opts)
	if err != nil {
		return nil, err
	}
	ToolAgentSessions(reqs, DefaultBlockTokens, opts.TPOT)
	return reqs, nil
}

// ToolAgentSessions rebuilds sessions from the hash_ids chains of reqs (blocks of blockTokens
// tokens) by the rule of the Mooncake toolagent import, setting Session ("a1", "a2", … in the
// order sessions start), Turn (in arrival order within the session), After (the request it
// continues) and ToolDelay (the gap less the estimated response time, output tokens × tpot) of
// every request that continues another. Requests already in a session are left alone.
func ToolAgentSessions(reqs []Request, blockTokens int, tpot time.Duration) {
	order := make([]int, 0, len(reqs))
	for i := range reqs {
		if reqs[i].Session == "" {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return reqs[order[a]].Arrival < reqs[order[b]].Arrival })
	byChain := map[idChain][]int{}
	parent := make(map[int]int, len(order))
	session := make(map[int]int, len(order))
	sessions := 0
	for g := 0; g < len(order); {
		// Requests of equal arrival cannot continue one another: match the whole group against
		// the requests before it, then index it.
		end := g
		for end < len(order) && reqs[order[end]].Arrival == reqs[order[g]].Arrival {
			end++
		}
		for _, b := range order[g:end] {
			best := chainParent(reqs, byChain, &reqs[b])
			if best < 0 {
				sessions++
				session[b] = sessions
				continue
			}
			parent[b] = best
			session[b] = session[best]
		}
		for _, a := range order[g:end] {
			indexChain(byChain, reqs, a, blockTokens)
		}
		g = end
	}
	turns := map[int]int{}
	for _, i := range order {
		q := &reqs[i]
		s := session[i]
		turns[s]++
		q.Session = "a" + strconv.Itoa(s)
		q.Turn = turns[s]
	}
	for _, i := range order {
		p, ok := parent[i]
		if !ok {
			continue
		}
		q, a := &reqs[i], &reqs[p]
		q.After = []int{a.Turn}
		est := time.Duration(min(float64(a.OutputTokens)*float64(tpot), float64(MaxSeconds*time.Second)))
		q.ToolDelay = min(max(0, q.Arrival-a.Arrival-est), MaxSeconds*time.Second)
	}
}

// idChain is a chain of hash_ids: its length in blocks and the hash of its ids.
type idChain struct {
	n int    // full blocks
	h uint64 // hash of the first n ids
}

// chainParent is the request (its index in reqs) that q continues, -1 for none: of the
// indexed requests whose chain is a prefix of q's hash_ids and whose prompt and answer fit in
// q's prompt, the one with the longest chain, then the longest common prefix with q, then the
// latest arrival.
func chainParent(reqs []Request, byChain map[idChain][]int, q *Request) int {
	best, bestN, bestCommon := -1, 0, 0
	h := uint64(fnvOffset64)
	for k := 1; k <= len(q.HashIDs); k++ {
		h = fnvMix(h, q.HashIDs[k-1])
		for _, a := range byChain[idChain{k, h}] {
			p := &reqs[a]
			if !sameIDs(p.HashIDs[:k], q.HashIDs[:k]) || q.InputTokens < p.InputTokens+p.OutputTokens {
				continue
			}
			common := commonPrefix(p.HashIDs, q.HashIDs)
			if k > bestN || k == bestN && (common > bestCommon || common == bestCommon && p.Arrival >= reqs[best].Arrival) {
				best, bestN, bestCommon = a, k, common
			}
		}
	}
	return best
}

// indexChain indexes request a under the chain of its hash_ids that its prompt fills (blocks
// of blockTokens tokens); a request without a full block is not indexed.
func indexChain(byChain map[idChain][]int, reqs []Request, a, blockTokens int) {
	q := &reqs[a]
	n := min(len(q.HashIDs), q.InputTokens/blockTokens)
	if n < 1 {
		return
	}
	h := uint64(fnvOffset64)
	for _, id := range q.HashIDs[:n] {
		h = fnvMix(h, id)
	}
	byChain[idChain{n, h}] = append(byChain[idChain{n, h}], a)
}

const fnvOffset64 = 14695981039346656037

func fnvMix(h uint64, id int64) uint64 {
	v := uint64(id)
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= 1099511628211
		v >>= 8
	}
	return h
}

func commonPrefix(a, b []int64) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func sameIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// clampSeconds converts seconds to a duration within the trace format's bounds (0 to
// MaxSeconds); NaN is 0.
func clampSeconds(s float64) time.Duration {
	if !(s > 0) {
		return 0
	}
	return time.Duration(math.Round(min(s, MaxSeconds) * 1e9))
}
