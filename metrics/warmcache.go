package metrics

import "fmt"

// A warm cache (issue 45). A run whose server found far more of its prompts in its prefix
// cache than the trace designs met those prompts before — the same trace and seed run
// earlier against a server that keeps prompts across requests (llama.cpp keeps them in host
// memory) — and its TTFT is that of a warm cache, not of the workload. The summary warns,
// and `run --cold` (runner/cold.go) flushes the cache where the server offers a way and salts
// the prompts so that none was sent before.

// WarmExcess is how far (hit-rate fraction) the achieved prefix-cache hit rate may exceed the
// designed one before a run warns that its TTFT is warm.
const WarmExcess = 0.20

// AboveDesigned reports whether the achieved hit rate exceeds the designed one by more than
// WarmExcess.
func (pc *PrefixCache) AboveDesigned() bool {
	return pc != nil && pc.DesignedHitRate != nil && pc.PromptTokens > 0 && pc.HitRate-*pc.DesignedHitRate > WarmExcess+1e-12
}

// warmPrefix begins WarmWarning's sentence.
const warmPrefix = "prefix cache: the server had these prompts cached:"

// WarmWarning is the warning of a summary whose prefix_cache block is AboveDesigned, "" when
// it is not.
func WarmWarning(pc *PrefixCache) string {
	if !pc.AboveDesigned() {
		return ""
	}
	return fmt.Sprintf("%s %.1f%% of the prompt tokens came from its prefix cache where the trace designs %.1f%% (%+.1f pp), so TTFT is warm — flush, or salt the prompts (run --cold does both where it can; if this run was cold already, the server keeps prompts beyond its flush, or the trace's requests carry their own text, which no salt changes)",
		warmPrefix, 100*pc.HitRate, 100**pc.DesignedHitRate, 100*(pc.HitRate-*pc.DesignedHitRate))
}

// ColdStart is the run facts' "cold" block (run --cold): how the run kept the server's prefix
// cache from serving prompts it had seen before.
type ColdStart struct {
	// Flushed names the endpoint that dropped the server's prefix cache before the run
	// (runner/cacheflush.go); empty when none did, FlushNote then says why.
	Flushed   string `json:"flushed,omitempty"`
	FlushNote string `json:"flush_note,omitempty"`
	// Salt is the salt of the run's synthesized prompts (RunInfo.PromptSalt; run --prompt-salt
	// with it sends the same prompts again).
	Salt uint64 `json:"salt"`
	// OwnText counts the trace's requests that carry their own prompt text, which a salt
	// leaves as they are; Requests is the trace's requests.
	OwnText  int `json:"own_text,omitempty"`
	Requests int `json:"requests"`
}
