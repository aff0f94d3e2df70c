package metrics

// ShardInfo is what summary.json's run block says about one shard of a sharded run
// (llmbench run --shard I/N; see docs/distributed.md).
type ShardInfo struct {
	// Index is the shard's 0-based index, Count the number of shards.
	Index int `json:"index"`
	Count int `json:"count"`
	// TraceFingerprint identifies the whole trace the shards split (runner.TraceFingerprint).
	TraceFingerprint string `json:"trace_fingerprint"`
	// Requests is how many of the trace's requests (times --repeat) are this shard's.
	Requests int `json:"requests"`
	// Epoch is the run epoch on this shard's own wall clock (RFC 3339, nanoseconds): every
	// record time counts from it. With a common --start-at it is that instant corrected by
	// the clock offset.
	Epoch string `json:"epoch"`
	// Clock is the shard's measured clock offset against the common reference.
	Clock Clock `json:"clock"`
}

// Clock is a measured clock offset: reference time = local time + OffsetNs, known to within
// ±BoundNs (half the shortest round trip of the samples). Method "round-trip" is the only one
// that measures; "none" means no reference answered and the local clock was trusted
// (OffsetNs 0, BoundNs −1: unknown).
type Clock struct {
	Method    string `json:"method"`
	Reference string `json:"reference,omitempty"`
	OffsetNs  int64  `json:"offset_ns"`
	BoundNs   int64  `json:"bound_ns"`
	Samples   int    `json:"samples,omitempty"`
	Error     string `json:"error,omitempty"`
}

// MergeInfo is what summary.json's run block says about a result merged from shards
// (llmbench merge).
type MergeInfo struct {
	// Shards is the number of shards the run was split into; Merged the indexes whose results
	// were found; Missing those with no results directory; Partial those whose run did not
	// finish (killed or interrupted): their requests without a record are counted as dropped.
	Shards  int   `json:"shards"`
	Merged  []int `json:"merged"`
	Missing []int `json:"missing,omitempty"`
	Partial []int `json:"partial,omitempty"`
	// Dropped counts the requests of missing and partial shards that have no record.
	Dropped int `json:"dropped"`
	// Epoch is the common epoch (reference clock) every merged time counts from.
	Epoch string `json:"epoch"`
	// WorstOffsetNs is the largest |clock offset| of a shard; WorstBoundNs the largest
	// uncertainty left after correcting it (−1 when a shard's offset was not measured).
	WorstOffsetNs int64 `json:"worst_offset_ns"`
	WorstBoundNs  int64 `json:"worst_bound_ns"`
}
