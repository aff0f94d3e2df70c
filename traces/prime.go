package traces

import (
	"fmt"
)

// Priming (issue 34, controlled hit rate): before a measured run, one request per prefix group
// sends the group's shared prefix, so that the group's first measured request finds it cached
// like every later one and the run measures the reuse the trace designs in steady state.

// PrimeIDPrefix starts the ID of every request PrimeRequests makes.
const PrimeIDPrefix = "prime-"

// PrimeRequests returns the requests that prime the prefix groups of reqs: requests whose
// prompt is synthesized from HashIDs (no Prompt, no Messages) are grouped by their first hash
// id, and each group gets one request that sends the group's longest common run of leading
// hash ids — the prefix they all share — and asks for one output token. A request alone in
// its group is primed only when its hash ids stop short of its prompt (they are then a
// declared prefix, as gen's prefix groups write them, and the rest is its own); when they
// cover it all, nothing says which of them another request would share.
// The run of a group is as many tokens as its blocks cover (blockTokens each, <= 0 means
// DefaultBlockTokens), but no more than the shortest member's input. Groups come in order of
// their first member in reqs; every request arrives at 0 and is IDed "prime-<k>".
func PrimeRequests(reqs []Request, blockTokens int) []Request {
	if blockTokens <= 0 {
		blockTokens = DefaultBlockTokens
	}
	type group struct {
		run     []int64
		members int
		minIn   int
	}
	var order []int64
	groups := map[int64]*group{}
	for i := range reqs {
		r := &reqs[i]
		if len(r.HashIDs) == 0 || r.Prompt != "" || len(r.Messages) > 0 || r.InputTokens <= 0 {
			continue
		}
		g, ok := groups[r.HashIDs[0]]
		if !ok {
			groups[r.HashIDs[0]] = &group{run: r.HashIDs, members: 1, minIn: r.InputTokens}
			order = append(order, r.HashIDs[0])
			continue
		}
		g.members++
		g.minIn = min(g.minIn, r.InputTokens)
		n := 0
		for n < len(g.run) && n < len(r.HashIDs) && g.run[n] == r.HashIDs[n] {
			n++
		}
		g.run = g.run[:n]
	}
	var out []Request
	for _, first := range order {
		g := groups[first]
		if g.members < 2 && len(g.run)*blockTokens >= g.minIn {
			continue
		}
		in := min(len(g.run)*blockTokens, g.minIn)
		blocks := (in + blockTokens - 1) / blockTokens
		out = append(out, Request{ID: fmt.Sprintf("%s%d", PrimeIDPrefix, len(out)), InputTokens: in, OutputTokens: 1,
			HashIDs: append([]int64(nil), g.run[:blocks]...), Class: "prime"})
	}
	return out
}

// DesignedReuseAfter is DesignedReuseByID of reqs when the requests of primed (PrimeRequests)
// were all sent before any of them: their blocks count as seen by an earlier request. The
// primed requests themselves are not in the map.
func DesignedReuseAfter(primed, reqs []Request, blockTokens int) map[string]DesignedReuse {
	out := make(map[string]DesignedReuse, len(reqs))
	// A slice is always read: no error.
	_ = walkDesigned(FromSlice(reqs), primed, blockTokens, func(r *Request, d DesignedReuse) error {
		out[r.ID] = d
		return nil
	})
	return out
}

// designed adds r to c and returns its DesignedReuse.
func (c *prefixCache) designed(r *Request) DesignedReuse {
	in := int64(max(r.InputTokens, 0))
	again := min(int64(len(r.HashIDs))*int64(c.blockTokens), in)
	return DesignedReuse{First: c.add(r), Again: again, Input: in}
}
