package tokenizer

import (
	"strings"
	"sync"
	"sync/atomic"
)

// wordCache maps pre-tokenized pieces to their BPE ids for an HF. It is bounded and keeps
// working in a run of any length: entries go into the current generation; when that holds
// maxCached entries it becomes the previous generation (the one before is dropped) and a new
// one starts. A piece found only in the previous generation is copied into the current one,
// so words in steady use survive a rotation. At most about 2·maxCached entries are kept
// (a few more while goroutines race a rotation), each at most maxCachedLen bytes of key.
//
// Keys are copies: a caller's string may be a view of a buffer it reuses (loadgen counts
// streamed chunks that way), and a key that changes after insertion corrupts the map
// (issue 31: wrong counts, then a panic inside sync.Map). Reads take no lock.
type wordCache struct {
	cur, prev atomic.Pointer[cacheGen]
	rotate    sync.Mutex
}

type cacheGen struct {
	m sync.Map // string -> []int
	n atomic.Int64
}

// get returns the cached ids of w.
func (c *wordCache) get(w string) ([]int, bool) {
	cur := c.cur.Load()
	if cur == nil {
		return nil, false
	}
	if ids, ok := cur.m.Load(w); ok {
		return ids.([]int), true
	}
	prev := c.prev.Load()
	if prev == nil {
		return nil, false
	}
	ids, ok := prev.m.Load(w)
	if !ok {
		return nil, false
	}
	c.put(w, ids.([]int))
	return ids.([]int), true
}

// put stores a copy of w with its ids (which must not be modified afterwards).
func (c *wordCache) put(w string, ids []int) {
	cur := c.current()
	if _, loaded := cur.m.LoadOrStore(strings.Clone(w), ids); loaded {
		return
	}
	if cur.n.Add(1) >= maxCached {
		c.rotate.Lock()
		if c.cur.Load() == cur {
			c.prev.Store(cur)
			c.cur.Store(new(cacheGen))
		}
		c.rotate.Unlock()
	}
}

// current returns the current generation, creating the first one.
func (c *wordCache) current() *cacheGen {
	if cur := c.cur.Load(); cur != nil {
		return cur
	}
	c.cur.CompareAndSwap(nil, new(cacheGen))
	return c.cur.Load()
}

// reset empties the cache.
func (c *wordCache) reset() {
	c.rotate.Lock()
	c.cur.Store(nil)
	c.prev.Store(nil)
	c.rotate.Unlock()
}

// len is the number of entries kept (both generations).
func (c *wordCache) len() int {
	n := 0
	for _, g := range []*cacheGen{c.cur.Load(), c.prev.Load()} {
		if g != nil {
			n += int(g.n.Load())
		}
	}
	return n
}
