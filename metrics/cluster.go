package metrics

// Cluster is the per-replica load of a simulated cluster (`simulate --replicas N`): how the
// router spread the requests and what each replica did with them. The engine reports it (a
// replica's prefix-cache hits are not visible in the records); the summary carries it as
// given.
type Cluster struct {
	// Router is the routing policy: round-robin, least-loaded or prefix-aware.
	Router   string        `json:"router"`
	Replicas []ReplicaLoad `json:"replicas"`
}

// ReplicaLoad is one replica's share.
type ReplicaLoad struct {
	// Requests routed to the replica, and the prompt and output tokens it processed.
	Requests     int   `json:"requests"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// PrefixHitRate is the share of its prompt tokens found in its prefix cache (0 when prefix
	// caching is off).
	PrefixHitRate float64 `json:"prefix_hit_rate"`
	// BusyFraction is the share of the run's makespan its engine spent in steps (above 1 for a
	// disaggregated replica, whose two pools step at once).
	BusyFraction float64 `json:"busy_fraction"`
	Preemptions  int64   `json:"preemptions"`
}
