package refengine

import "time"

// The backlog of a Simulation (issue 35): when the engine falls behind its trace, the requests
// that have arrived but that the scheduler's waiting queue cannot admit in its next step are
// held here as a queued value each (96 bytes, with no timeline, KV blocks or emission
// storage), in arrival order, and made into sequences only as the waiting queue needs them.
// Memory then grows with the backlog by that much per request, not by the few kilobytes a
// sequence ready to run holds.
//
// The timelines are those of submitting every request at its arrival: the scheduler admits
// new requests from the front of its waiting queue, at most MaxNumSeqs in one step, so keeping
// that many in the queue before every step (topUp) gives it the same choices, and what a
// sequence is made of does not depend on when it is made.

// queued is a checked request that has not yet been made into a sequence (preparer.check).
// It is 96 bytes (152 before its lengths were made 32-bit and its block lists moved behind
// one pointer): at ten times an engine's capacity nearly every request of a trace waits here.
type queued struct {
	id         string
	blocks     *queuedBlocks // nil when the prompt has no blocks to hash (no hash ids, no text, or no prefix caching)
	arrival    time.Duration
	pos        int
	promptHash uint64
	outputSeed uint64
	rng        uint64
	rho        float64

	// The lengths are at most the max model length, which check holds within 32 bits.
	promptTokens, encodeTokens, target, maxTokens int32

	lora int32 // LoRA adapter (lora.go), 0 for the base model
}

// queuedBlocks is what a queued request's prefix-cache blocks are made from: the trace's block
// ids, hashed when the sequence is made, or the block hashes of a prompt given as text (whose
// text is not kept), made at check.
type queuedBlocks struct {
	hashIDs []int64
	hashes  []uint64
}

// backlogChunk is the number of queued requests one chunk of the backlog holds.
const backlogChunk = 1024

// backlog is a FIFO of queued requests in fixed-size chunks: it never copies what it holds to
// grow, and gives a chunk back once it is read.
type backlog struct {
	chunks [][]queued
	head   int // the next entry to pop in chunks[0]
	n      int
}

func (b *backlog) len() int { return b.n }

func (b *backlog) push(w *queued) {
	if k := len(b.chunks); k == 0 || len(b.chunks[k-1]) == backlogChunk {
		b.chunks = append(b.chunks, make([]queued, 0, backlogChunk))
	}
	last := &b.chunks[len(b.chunks)-1]
	*last = append(*last, *w)
	b.n++
}

// pop removes the oldest entry into w; the backlog must not be empty.
func (b *backlog) pop(w *queued) {
	c := b.chunks[0]
	*w = c[b.head]
	c[b.head] = queued{}
	b.head++
	b.n--
	if b.head == len(c) { // read to its end: a full chunk, or the last one
		b.chunks[0] = nil
		b.chunks = b.chunks[1:]
		b.head = 0
	}
}
