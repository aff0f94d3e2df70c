package refengine

// blockPool is the PagedAttention KV cache: a fixed number of blocks of BlockSize tokens, with
// reference counts, and (when prefix caching is on) a map from a full prompt block's chained hash
// to the block holding it.
//
// Free blocks sit in one doubly linked queue. Allocation takes the head. A freed block that holds
// a cached prefix goes to the tail, so cached blocks are evicted in least-recently-freed order
// (LRU); a freed block without a hash goes to the head, so it is reused before any cached block
// is evicted. A cached block found by a later request is taken out of the queue and shared
// (reference count above one). Nothing here allocates after the first cached block.
type blockPool struct {
	ref        []int32
	hash       []uint64 // 0: not cached
	prev, next []int32
	head, tail int32
	free       int
	cached     blockTable
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
		cached: newBlockTable(n),
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
		p.cached.del(h)
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
	if _, dup := p.cached.get(h); dup {
		return
	}
	p.hash[b] = h
	p.cached.put(h, b)
}

// cachedBlocks is the number of blocks holding a cached prefix.
func (p *blockPool) cachedBlocks() int { return p.cached.len() }
