package runner

import (
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// Workload is summary.json's "workload" block: the trace's statistics (traces.Stats, images
// included) and the API its requests went to.
type Workload struct {
	traces.Stats
	// API is --api, or, when requests chose per request, "chat" (every request carries
	// messages), "completions" (none does) or "completions+chat".
	API string `json:"api"`
	// BatchSize is the trace requests per call (embeddings; omitted when 1).
	BatchSize int `json:"batch_size,omitempty"`
}

func workloadOf(st traces.Stats, info metrics.RunInfo) Workload {
	w := Workload{Stats: st, API: info.API}
	if info.BatchSize > 1 {
		w.BatchSize = info.BatchSize
	}
	if w.API == "" {
		switch {
		case st.Chat == st.Count:
			w.API = "chat"
		case st.Chat == 0:
			w.API = "completions"
		default:
			w.API = "completions+chat"
		}
	}
	return w
}
