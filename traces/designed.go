package traces

import (
	"cmp"
	"errors"
	"hash/maphash"
	"math"
	"slices"
)

// DesignedReuse is one request's designed prefix-cache reuse (issue 34): the input tokens an
// unbounded prefix cache would already hold when it arrives, by the same walk as
// Stats.PrefixReuseTokens (prefixCache in stats.go).
type DesignedReuse struct {
	// First is the reuse on the trace's first pass, from the requests that arrived before it.
	First int64
	// Again is the reuse on a repeated pass (--repeat): after a whole pass every block chain
	// of the trace is held, so it is the tokens its hash_ids blocks cover.
	Again int64
	// Input is the request's input_tokens.
	Input int64
}

// DesignedReuseByID computes DesignedReuse for every request of reqs, in arrival order (the
// slice's order among equal arrivals), with blockTokens tokens per hash_ids block (<= 0 means
// DefaultBlockTokens), keyed by request ID.
func DesignedReuseByID(reqs []Request, blockTokens int) map[string]DesignedReuse {
	if blockTokens <= 0 {
		blockTokens = DefaultBlockTokens
	}
	return DesignedReuseAfter(nil, reqs, blockTokens)
}

// walkDesigned adds the requests of primed, then those of src in arrival order (InArrivalOrder),
// to a prefix cache of blockTokens tokens per block and calls fn with each request of src and
// its DesignedReuse. src is read as it is walked.
func walkDesigned(src Source, primed []Request, blockTokens int, fn func(r *Request, d DesignedReuse) error) error {
	if blockTokens <= 0 {
		blockTokens = DefaultBlockTokens
	}
	c := prefixCache{chains: map[chainKey]int{}, blockTokens: blockTokens}
	for i := range primed {
		c.add(&primed[i])
	}
	return InArrivalOrder(src, func(_ int, r *Request) error { return fn(r, c.designed(r)) })
}

// DesignedIndex is the DesignedReuse of every request of a trace by ID, held compactly for a
// summary that looks up every record (IndexDesignedReuse): 40 bytes and the ID's bytes per
// request, where a map by ID took about 120 for a million requests of short IDs.
type DesignedIndex struct {
	ids     []byte // every request's ID, back to back in walk order
	entries []designedEntry
	seed    maphash.Seed
}

type designedEntry struct {
	hash   uint64
	off, n uint32 // the ID is ids[off : off+n]
	d      DesignedReuse
}

// IndexDesignedReuse is DesignedReuseAfter(primed, the requests of src, blockTokens) with src
// read as it is walked, not held (a summary asks for it while a streamed run or simulation is
// still going), into a DesignedIndex. A failure to read src returns no index.
func IndexDesignedReuse(src Source, primed []Request, blockTokens int) (*DesignedIndex, error) {
	x := &DesignedIndex{entries: make([]designedEntry, 0, src.Len()), seed: maphash.MakeSeed()}
	err := walkDesigned(src, primed, blockTokens, func(r *Request, d DesignedReuse) error {
		off := len(x.ids)
		if uint64(off)+uint64(len(r.ID)) > math.MaxUint32 {
			return errors.New("the trace's request IDs take more than 4 GB")
		}
		x.ids = append(x.ids, r.ID...)
		x.entries = append(x.entries, designedEntry{hash: maphash.String(x.seed, r.ID), off: uint32(off), n: uint32(len(r.ID)), d: d})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// By hash, then walk order (an ID's bytes lie later in ids the later it was walked).
	slices.SortFunc(x.entries, func(a, b designedEntry) int {
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return cmp.Compare(a.off, b.off)
	})
	return x, nil
}

// Lookup is the DesignedReuse of the request with ID id (of the last one walked, when the trace
// repeats an ID, as DesignedReuseAfter's map keeps it), and whether the trace has one.
func (x *DesignedIndex) Lookup(id string) (DesignedReuse, bool) {
	if x == nil {
		return DesignedReuse{}, false
	}
	h := maphash.String(x.seed, id)
	i, _ := slices.BinarySearchFunc(x.entries, h, func(e designedEntry, h uint64) int { return cmp.Compare(e.hash, h) })
	var d DesignedReuse
	found := false
	for ; i < len(x.entries) && x.entries[i].hash == h; i++ {
		e := &x.entries[i]
		if string(x.ids[e.off:e.off+e.n]) == id {
			d, found = e.d, true
		}
	}
	return d, found
}
