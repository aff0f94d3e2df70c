package engineadapter

import "github.com/llmbench/llmbench/traces"

// What the simulator keeps of each request in flight for its record (simulate_stream.go).
// When the engine falls behind the trace, that is every request that has arrived, so it is
// small and stored without a map: by walk index in chunks, which the walk fills in order and
// the engine empties roughly in order (issue 35).

// held is what a request's record needs of its trace request.
type held struct {
	id, class    string
	outputTokens int
	rest         *traces.Request // the whole of what the record reads, when it reads more
}

// holdRequest is what the simulator keeps of req (what FillRecord reads).
func holdRequest(req *traces.Request) held {
	h := held{id: req.ID, class: req.Class, outputTokens: req.OutputTokens}
	if req.Session != "" || req.Turn != 0 || req.NaturalEnd() || req.Model != "" {
		r := *req
		h.rest = &r
	}
	return h
}

// request is the trace request of h as FillRecord reads it.
func (h *held) request() traces.Request {
	if h.rest != nil {
		return *h.rest
	}
	return traces.Request{ID: h.id, Class: h.class, OutputTokens: h.outputTokens}
}

// heldChunk is the number of requests one chunk of a heldQueue holds.
const heldChunk = 1024

type heldSlots struct {
	h    [heldChunk]held
	live int // entries added and not yet taken
}

// heldQueue holds the requests in flight by walk index k. A request is taken by its trace
// position, which is its walk index for a trace read in arrival order; the few positions that
// differ are mapped to their index.
type heldQueue struct {
	first  int // the walk index of chunks[0].h[0]
	next   int // the walk index of the next request added
	chunks []*heldSlots
	remap  map[int]int // position → walk index, where they differ
}

// add holds h for the request at position pos and returns its walk index.
func (q *heldQueue) add(pos int, h held) int {
	k := q.next
	q.next++
	i := k - q.first
	if i/heldChunk == len(q.chunks) {
		q.chunks = append(q.chunks, &heldSlots{})
	}
	c := q.chunks[i/heldChunk]
	c.h[i%heldChunk] = h
	c.live++
	if pos != k {
		if q.remap == nil {
			q.remap = map[int]int{}
		}
		q.remap[pos] = k
	}
	return k
}

// take removes the request at position pos (which must be held) and returns it with its walk
// index.
func (q *heldQueue) take(pos int) (held, int) {
	k := pos
	if kk, ok := q.remap[pos]; ok {
		k = kk
		delete(q.remap, pos)
	}
	i := k - q.first
	c := q.chunks[i/heldChunk]
	h := c.h[i%heldChunk]
	c.h[i%heldChunk] = held{}
	c.live--
	// Give back the leading chunks that are full and all taken.
	for len(q.chunks) > 0 && q.chunks[0].live == 0 && q.next-q.first >= heldChunk {
		q.chunks[0] = nil
		q.chunks = q.chunks[1:]
		q.first += heldChunk
	}
	return h, k
}
