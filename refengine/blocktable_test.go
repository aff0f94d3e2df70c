package refengine

import (
	"testing"

	"github.com/llmbench/llmbench/tokenizer"
)

// TestBlockTableMatchesMap: random inserts, lookups and deletes on a small table (so that
// probe runs collide and wrap around its end) agree with a Go map at every step.
func TestBlockTableMatchesMap(t *testing.T) {
	for _, keySpace := range []uint64{8, 40, 1 << 40} {
		tab := newBlockTable(16) // 32 slots, at most 16 entries
		ref := map[uint64]int32{}
		var rng uint64 = keySpace
		for step := 0; step < 200_000; step++ {
			rng = tokenizer.Mix(rng + 1)
			h := 1 + rng%keySpace
			if keySpace < 64 {
				h = 1 + (rng>>8)%keySpace*0x10000 // equal low bits: same home slots
			}
			switch rng % 3 {
			case 0:
				if _, ok := ref[h]; !ok && len(ref) < 16 {
					ref[h] = int32(step)
					tab.put(h, int32(step))
				}
			case 1:
				delete(ref, h)
				tab.del(h)
			}
			want, wok := ref[h]
			got, gok := tab.get(h)
			if gok != wok || (wok && got != want) || tab.len() != len(ref) {
				t.Fatalf("keys %d, step %d: get(%d) = %d %v, want %d %v; len %d want %d", keySpace, step, h, got, gok, want, wok, tab.len(), len(ref))
			}
		}
		for h, b := range ref {
			if got, ok := tab.get(h); !ok || got != b {
				t.Fatalf("keys %d: %d lost", keySpace, h)
			}
		}
	}
	var empty blockTable = newBlockTable(4)
	if _, ok := empty.get(0); ok {
		t.Error("hash 0 found in an empty table")
	}
}
