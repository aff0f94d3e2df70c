package refengine

// blockTable maps the chained hash of a cached prompt block (never 0) to the block holding it:
// open addressing with linear probing and backward-shift deletion, in two flat arrays sized
// once to at least twice the number of blocks (a block holds at most one hash, so the table is
// never more than half full and never grows). It replaces a map[uint64]int32: a simulation
// inserts and evicts a hash for every full prompt block (≈ 80 per request of 1,300 prompt
// tokens), and the map's probing was a third of the scheduler's time. Measured on the shared
// 2-core machine (load ≈ 17), CPU time of BenchmarkSimulate100k's process: the map 1.73 and
// 1.96 s, this table 1.18 and 1.20 s; BenchmarkSimulate10k 0.67–0.89 s against 0.54–0.58 s.
type blockTable struct {
	keys  []uint64 // 0: empty slot
	vals  []int32
	shift uint // 64 - log2(len(keys))
	mask  uint64
	n     int
	size  int // slots to allocate on first insert
}

func newBlockTable(blocks int) blockTable {
	size, bits := 16, uint(4)
	for size < 2*blocks {
		size, bits = size<<1, bits+1
	}
	return blockTable{shift: 64 - bits, mask: uint64(size - 1), size: size}
}

// home is the slot a hash probes first (Fibonacci hashing of the already mixed hash).
func (t *blockTable) home(h uint64) uint64 { return (h * 0x9e3779b97f4a7c15) >> t.shift }

func (t *blockTable) get(h uint64) (int32, bool) {
	if h == 0 || t.n == 0 {
		return noBlock, false
	}
	for i := t.home(h); ; i = (i + 1) & t.mask {
		switch t.keys[i] {
		case h:
			return t.vals[i], true
		case 0:
			return noBlock, false
		}
	}
}

// put inserts h, which must not be present, for block b.
func (t *blockTable) put(h uint64, b int32) {
	if t.keys == nil {
		t.keys, t.vals = make([]uint64, t.size), make([]int32, t.size)
	}
	i := t.home(h)
	for t.keys[i] != 0 {
		i = (i + 1) & t.mask
	}
	t.keys[i], t.vals[i] = h, b
	t.n++
}

// del removes h if present, shifting back the entries after it that would otherwise become
// unreachable (Knuth's algorithm R), so that no tombstones accumulate.
func (t *blockTable) del(h uint64) {
	if h == 0 || t.n == 0 {
		return
	}
	i := t.home(h)
	for t.keys[i] != h {
		if t.keys[i] == 0 {
			return
		}
		i = (i + 1) & t.mask
	}
	for j := (i + 1) & t.mask; t.keys[j] != 0; j = (j + 1) & t.mask {
		k := t.home(t.keys[j])
		// The entry at j stays unless its home lies cyclically outside (i, j].
		if (i < j && (k <= i || k > j)) || (i > j && k <= i && k > j) {
			t.keys[i], t.vals[i] = t.keys[j], t.vals[j]
			i = j
		}
	}
	t.keys[i] = 0
	t.n--
}

func (t *blockTable) len() int { return t.n }
