package refengine

import "testing"

// TestHashIndexMatchesAMap: random puts, gets and removes (with probe runs that wrap around the
// end of a small table) agree with a Go map.
func TestHashIndexMatchesAMap(t *testing.T) {
	x := newHashIndex(8) // 16 slots
	ref := map[uint64]int32{}
	st := uint64(9)
	for op := 0; op < 200000; op++ {
		h := 1 + uint64(uniform(&st)*24)*0x1234567 // few distinct keys: long, colliding runs
		switch u := uniform(&st); {
		case u < 0.45 && len(ref) < 8:
			_, had := ref[h]
			if !had {
				ref[h] = int32(op)
			}
			if x.add(h, int32(op)) == had {
				t.Fatalf("op %d: add(%x) reported %v with the key present: %v", op, h, !had, had)
			}
		case u < 0.8:
			delete(ref, h)
			x.remove(h)
		default:
			b, ok := x.get(h)
			if rb, rok := ref[h]; ok != rok || (ok && b != rb) {
				t.Fatalf("op %d: get(%x) = %d, %v; map has %d, %v", op, h, b, ok, rb, rok)
			}
		}
		if x.n != len(ref) {
			t.Fatalf("op %d: %d entries, map has %d", op, x.n, len(ref))
		}
	}
	for h, rb := range ref {
		if b, ok := x.get(h); !ok || b != rb {
			t.Fatalf("get(%x) = %d, %v; want %d", h, b, ok, rb)
		}
	}
}
