package runner

import "github.com/llmbench/llmbench/metrics"

// Speculative decoding counters (issue 38, metrics/speculative.go): vLLM's spec_decode_*
// counters (vllm/v1/spec_decode/metrics.py: drafts are verification passes, draft tokens
// proposed, accepted tokens; "_total" in the exposition), summed over their label sets, read
// on every scrape and turned into a delta over the measured window like the prefix-cache
// counters (scrape_prefix.go). SGLang exports only rolling gauges (sglang:spec_accept_length,
// sglang:spec_accept_rate): they are not a per-run figure, and its per-response meta_info is
// read by loadgen instead.
var specCounters = struct{ drafts, draftTokens, accepted string }{
	"vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_accepted_tokens_total",
}

// specSource names the counters in the summary.
const specSource = "vllm:spec_decode_num_drafts / num_draft_tokens / num_accepted_tokens"

// pickSpec reads the speculative counters of one scrape (-1 each when not all are exported).
func pickSpec(m map[string]float64) (drafts, draftTokens, accepted float64) {
	d, ok1 := m[specCounters.drafts]
	t, ok2 := m[specCounters.draftTokens]
	a, ok3 := m[specCounters.accepted]
	if ok1 && ok2 && ok3 && counterValue(d) && counterValue(t) && counterValue(a) {
		return d, t, a
	}
	return -1, -1, -1
}

// serverSpeculative is the server's speculative counters' increase over [startS, endS], or nil
// when no scrape carried them (the server does not decode speculatively, or is not vLLM).
func serverSpeculative(d ServerSamples, startS, endS float64) *metrics.ServerSpeculative {
	var pts []metrics.SpecCounterPoint
	for _, s := range d.Samples {
		if s.SpecDrafts >= 0 && s.SpecDraftTokens >= 0 && s.SpecAccepted >= 0 {
			pts = append(pts, metrics.SpecCounterPoint{T: s.T, Drafts: s.SpecDrafts, DraftTokens: s.SpecDraftTokens, Accepted: s.SpecAccepted})
		}
	}
	if len(pts) == 0 {
		return nil
	}
	return metrics.ServerSpeculativeDelta(d.Backend, specSource, pts, startS, endS)
}
