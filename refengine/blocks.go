package refengine

// blockPool is the PagedAttention KV cache: a fixed number of blocks of BlockSize tokens, with
// reference counts, and (when prefix caching is on) a map from a full prompt block's chained hash
// to the block holding it.
//
// Free blocks sit in one doubly linked queue. Allocation takes the head. A freed block that holds
// a cached prefix goes to the tail, so cached blocks are evicted in least-recently-freed order
// (LRU); a freed block without a hash goes to the head, so it is reused before any cached block
// is evicted. A cached block found by a later request is taken out of the queue and shared
// (reference count above one). Nothing here allocates after construction.
type blockPool struct {
	ref        []int32
	hash       []uint64 // 0: not cached
	prev, next []int32
	head, tail int32
	free       int
	cached     hashIndex
	evictions  int64
}

const noBlock = -1

func newBlockPool(n int) *blockPool {
	p := &blockPool{
		ref:    make([]int32, n),
		hash:   make([]uint64, n),
		prev:   make([]int32, n),
		next:   make([]int32, n),
		head:   noBlock,
		tail:   noBlock,
		cached: newHashIndex(n),
	}
	for i := 0; i < n; i++ {
		p.pushTail(int32(i))
	}
	return p
}

func (p *blockPool) numBlocks() int { return len(p.ref) }

// used is the number of blocks held by at least one sequence.
func (p *blockPool) used() int { return len(p.ref) - p.free }

func (p *blockPool) pushTail(b int32) {
	p.prev[b], p.next[b] = p.tail, noBlock
	if p.tail != noBlock {
		p.next[p.tail] = b
	} else {
		p.head = b
	}
	p.tail = b
	p.free++
}

func (p *blockPool) pushHead(b int32) {
	p.prev[b], p.next[b] = noBlock, p.head
	if p.head != noBlock {
		p.prev[p.head] = b
	} else {
		p.tail = b
	}
	p.head = b
	p.free++
}

func (p *blockPool) unlink(b int32) {
	if p.prev[b] != noBlock {
		p.next[p.prev[b]] = p.next[b]
	} else {
		p.head = p.next[b]
	}
	if p.next[b] != noBlock {
		p.prev[p.next[b]] = p.prev[b]
	} else {
		p.tail = p.prev[b]
	}
	p.prev[b], p.next[b] = noBlock, noBlock
	p.free--
}

// alloc takes a free block (evicting its cached prefix, if any); it reports false when none is
// free.
func (p *blockPool) alloc() (int32, bool) {
	b := p.head
	if b == noBlock {
		return noBlock, false
	}
	p.unlink(b)
	if h := p.hash[b]; h != 0 {
		p.cached.remove(h)
		p.hash[b] = 0
		p.evictions++
	}
	p.ref[b] = 1
	return b, true
}

// release drops one reference to b.
func (p *blockPool) release(b int32) {
	p.ref[b]--
	if p.ref[b] > 0 {
		return
	}
	if p.hash[b] != 0 {
		p.pushTail(b)
	} else {
		p.pushHead(b)
	}
}

// lookup returns the block caching hash h, taking a reference to it.
func (p *blockPool) lookup(h uint64) (int32, bool) {
	b, ok := p.cached.get(h)
	if !ok {
		return noBlock, false
	}
	if p.ref[b] == 0 {
		p.unlink(b)
	}
	p.ref[b]++
	return b, true
}

// register records that block b (full, held by a sequence) holds the prefix with hash h. A hash
// already cached in another block leaves b uncached, as vLLM does.
func (p *blockPool) register(b int32, h uint64) {
	if h == 0 || p.hash[b] != 0 {
		return
	}
	if p.cached.add(h, b) {
		p.hash[b] = h
	}
}

// cachedBlocks is the number of blocks holding a cached prefix.
func (p *blockPool) cachedBlocks() int { return p.cached.n }

// holds reports whether a block caches the prefix with hash h (a router's look, which takes no
// reference).
func (p *blockPool) holds(h uint64) bool {
	_, ok := p.cached.get(h)
	return ok
}

// hashIndex maps the hash of a cached prefix block to its block: open addressing with linear
// probing and backward-shift deletion (no tombstones), sized once for every block of the pool
// (so at most half full, and it never grows). It replaces a Go map, which was the simulator's
// hot spot under the churn of a long run (every prompt block registered, then deleted when its
// block is evicted): `llmbench plan` over a 12,155-request chat trace at 4x its rate (56
// simulated deployments, 12 shapes) spent 16.3 s of CPU with the map, the swiss table's group
// probes the largest share in pprof, and 11.2 s with this index (user time, one run each, on
// the 2-core development machine). Hash 0 marks an empty slot: register never caches it.
type hashIndex struct {
	slots []hashSlot
	shift uint
	n     int
}

// hashSlot keeps a key and its block together: one cache line per probe.
type hashSlot struct {
	h uint64
	b int32
}

func newHashIndex(blocks int) hashIndex {
	bits := uint(4)
	for 1<<bits < 2*blocks {
		bits++
	}
	return hashIndex{slots: make([]hashSlot, 1<<bits), shift: 64 - bits}
}

// home is h's first slot (Fibonacci hashing: the top bits of h times 2^64/φ).
func (x *hashIndex) home(h uint64) int { return int((h * 0x9e3779b97f4a7c15) >> x.shift) }

func (x *hashIndex) get(h uint64) (int32, bool) {
	mask := len(x.slots) - 1
	for i := x.home(h); x.slots[i].h != 0; i = (i + 1) & mask {
		if x.slots[i].h == h {
			return x.slots[i].b, true
		}
	}
	return noBlock, false
}

// add maps h to b unless h is present; it reports whether it did.
func (x *hashIndex) add(h uint64, b int32) bool {
	mask := len(x.slots) - 1
	i := x.home(h)
	for ; x.slots[i].h != 0; i = (i + 1) & mask {
		if x.slots[i].h == h {
			return false
		}
	}
	x.slots[i] = hashSlot{h, b}
	x.n++
	return true
}

// remove deletes h, shifting later entries of its probe run back so that no tombstone is left.
func (x *hashIndex) remove(h uint64) {
	mask := len(x.slots) - 1
	i := x.home(h)
	for x.slots[i].h != h {
		if x.slots[i].h == 0 {
			return
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; x.slots[j].h != 0; j = (j + 1) & mask {
		// The entry at j may move to the hole at i unless its home lies cyclically in (i, j].
		k := x.home(x.slots[j].h)
		if (i < j && i < k && k <= j) || (i > j && (k > i || k <= j)) {
			continue
		}
		x.slots[i] = x.slots[j]
		i = j
	}
	x.slots[i] = hashSlot{}
	x.n--
}
