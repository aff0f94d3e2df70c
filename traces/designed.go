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
