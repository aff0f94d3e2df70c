package traces

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

// DesignedReuseOf is DesignedReuseAfter(primed, the requests of src, blockTokens) with src read
// as it is walked (InArrivalOrder, the same order): memory holds the map and the prefix chains,
// not the trace (a summary asks for it while a streamed run or simulation is still going). A
// failure to read src returns no map.
func DesignedReuseOf(src Source, primed []Request, blockTokens int) (map[string]DesignedReuse, error) {
	if blockTokens <= 0 {
		blockTokens = DefaultBlockTokens
	}
	c := prefixCache{chains: map[chainKey]int{}, blockTokens: blockTokens}
	for i := range primed {
		c.add(&primed[i])
	}
	out := make(map[string]DesignedReuse, src.Len())
	err := InArrivalOrder(src, func(_ int, r *Request) error {
		out[r.ID] = c.designed(r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
