package reports

import "fmt"

// ServerSeries is what a --scrape-metrics poller saw on the endpoint's Prometheus /metrics
// over the run. T is seconds from the run epoch; every other non-nil slice has one value per T.
// A nil slice means the server did not export that metric.
type ServerSeries struct {
	// Source names what was scraped (for example "http://host:8000/metrics").
	Source string
	T      []float64
	// Running and Waiting are requests being processed and queued inside the server
	// (vllm:num_requests_running, vllm:num_requests_waiting).
	Running []float64
	Waiting []float64
	// KVCacheUsage is the fraction (0..1) of KV-cache blocks in use (vllm:gpu_cache_usage_perc
	// or vllm:kv_cache_usage_perc).
	KVCacheUsage []float64
	// Preemptions is the cumulative number of preempted sequences (vllm:num_preemptions_total).
	Preemptions []float64
}

// Validate checks that every present series has one value per sample time.
func (s *ServerSeries) Validate() error {
	if s == nil {
		return nil
	}
	for i := 1; i < len(s.T); i++ {
		if s.T[i] < s.T[i-1] {
			return fmt.Errorf("server metrics from %s: T[%d]=%g is before T[%d]=%g; samples must be in time order",
				s.Source, i, s.T[i], i-1, s.T[i-1])
		}
	}
	for _, f := range s.fields() {
		if f.vals != nil && len(f.vals) != len(s.T) {
			return fmt.Errorf("server metrics from %s: %s has %d values for %d sample times; give one value per time or nil",
				s.Source, f.key, len(f.vals), len(s.T))
		}
	}
	return nil
}

type serverField struct {
	key, label string
	vals       []float64
}

func (s *ServerSeries) fields() []serverField {
	return []serverField{
		{"running", "running", s.Running},
		{"waiting", "waiting", s.Waiting},
		{"kv_cache_usage", "KV cache used", s.KVCacheUsage},
		{"preemptions", "preemptions (cumulative)", s.Preemptions},
	}
}
