package loadgen

import (
	"encoding/binary"
	"sync"

	"github.com/llmbench/llmbench/metrics"
)

// packedChunks holds a stream's content chunks while it is in flight, compactly: for each
// chunk the gap since the previous one (the first: its time), the tokens the server's usage
// attributed to it and the client's own count, as unsigned varints, typically 6 bytes where
// a metrics.Chunk and its own count take 20. With tens of thousands of long streams open,
// the chunks are most of what grows (BENCHMARKS.md, "Memory per stream"). The Record gets
// its Chunks when the stream ends (unpack), just before it is handed to the sink.
type packedChunks struct {
	buf   []byte
	n     int   // chunks packed
	lastT int64 // the last chunk's time
}

// packedPool recycles the buffers of finished streams; one longer than keepPacked is
// dropped so that idle buffers hold little memory.
var packedPool = sync.Pool{New: func() any { return new(packedChunks) }}

const keepPacked = 64 << 10

func (p *packedChunks) add(t int64, tokens, own int64) {
	dt := t - p.lastT
	if p.n == 0 {
		dt = t
	}
	// Times come from a monotonic clock and tokens are never negative; a negative gap (a
	// clock that went back, only possible with an injected Clock) is packed as zero.
	p.buf = binary.AppendUvarint(p.buf, uint64(max(dt, 0)))
	p.buf = binary.AppendUvarint(p.buf, uint64(max(tokens, 0)))
	p.buf = binary.AppendUvarint(p.buf, uint64(max(own, 0)))
	p.lastT = max(t, p.lastT)
	p.n++
}

// unpack appends the chunks to chunks and their own counts to own.
func (p *packedChunks) unpack(chunks []metrics.Chunk, own []int32) ([]metrics.Chunk, []int32) {
	chunks = growChunks(chunks, p.n)
	var t int64
	b := p.buf
	for range p.n {
		dt, k := binary.Uvarint(b)
		b = b[k:]
		tokens, k := binary.Uvarint(b)
		b = b[k:]
		o, k := binary.Uvarint(b)
		b = b[k:]
		t += int64(dt)
		chunks = append(chunks, metrics.Chunk{T: t, Tokens: int32(tokens)})
		own = append(own, int32(o))
	}
	return chunks, own
}

func growChunks(c []metrics.Chunk, n int) []metrics.Chunk {
	if cap(c)-len(c) < n {
		g := make([]metrics.Chunk, len(c), len(c)+n)
		copy(g, c)
		return g
	}
	return c
}

func (p *packedChunks) release() {
	if cap(p.buf) > keepPacked {
		p.buf = nil
	}
	p.buf, p.n, p.lastT = p.buf[:0], 0, 0
	packedPool.Put(p)
}
