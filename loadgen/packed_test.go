package loadgen

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// Packed chunks unpack to exactly what was added: times (absolute, from gaps of any size),
// server-attributed tokens and own counts, over many seeded random streams.
func TestPackedChunksRoundTrip(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		p := packedPool.Get().(*packedChunks)
		n := rng.IntN(3000)
		var want []metrics.Chunk
		var wantOwn []int32
		tm := rng.Int64N(1 << 40)
		for range n {
			switch rng.IntN(4) {
			case 0:
				tm += rng.Int64N(1 << 50) // a gap of days
			case 1: // the same instant
			default:
				tm += rng.Int64N(1e8)
			}
			tokens, own := rng.Int64N(maxChunkTokens+1), rng.Int64N(math.MaxInt32)
			p.add(tm, tokens, own)
			want = append(want, metrics.Chunk{T: tm, Tokens: int32(tokens)})
			wantOwn = append(wantOwn, int32(own))
		}
		got, own := p.unpack(nil, nil)
		if len(got) != n || len(own) != n {
			t.Fatalf("seed %d: %d chunks, %d own counts, want %d", seed, len(got), len(own), n)
		}
		for i := range got {
			if got[i] != want[i] || own[i] != wantOwn[i] {
				t.Fatalf("seed %d chunk %d: %+v own %d, want %+v own %d", seed, i, got[i], own[i], want[i], wantOwn[i])
			}
		}
		p.release()
	}
}

// The packing is what makes a long stream cheap: one-token chunks 100 ms apart take 6 bytes
// each, where a metrics.Chunk and its own count take 20.
func TestPackedChunksSize(t *testing.T) {
	p := &packedChunks{}
	for i := range 1000 {
		p.add(int64(i+1)*1e8, 1, 1)
	}
	if per := float64(len(p.buf)) / 1000; per > 6.01 {
		t.Errorf("%.2f bytes per chunk, want at most 6", per)
	}
}
