package metrics

import "fmt"

// Token provenance of the records: where totals and per-chunk counts came from, and how the
// client's own count compares with the server's.

// wireGroup is a group's provenance and reasoning state beyond Requests.
type wireGroup struct {
	rejectExample string // the first UsageRejected reason seen

	// Reasoning requests (Record.ReasoningTokens or ReasoningChunks > 0).
	reasoningReqs                 int
	reasoningTokens, answerTokens int64
}

// Reasoning summarizes the successful requests whose output began with reasoning (a
// reasoning model's thinking, streamed as reasoning_content/reasoning deltas or reported in
// usage.completion_tokens_details.reasoning_tokens). Reasoning tokens are output tokens:
// throughput, TPOT and cost count them once, in Requests.OutputTokens.
type Reasoning struct {
	Requests        int   `json:"requests"`
	ReasoningTokens int64 `json:"reasoning_tokens"`
	AnswerTokens    int64 `json:"answer_tokens"`
	// TTFAT is the time to the first answer token (content, text or a tool call), from the
	// intended send time like TTFT; TTFT itself is the first generated token of any kind.
	TTFAT Dist `json:"ttfat"`
	// ITLReasoning / ITLAnswer are per-token ITL within each phase: a chunk's gap belongs to
	// the phase of the chunk it leads to (the first answer chunk's gap is the answer's).
	ITLReasoning Dist `json:"itl_reasoning"`
	ITLAnswer    Dist `json:"itl_answer"`
}

// addReasoning accumulates a successful reasoning record into g: its counts, and its per-token
// gaps into the registry's summary-only families itl_reasoning and itl_answer (a chunk's gap
// belongs to the phase of the chunk it leads to).
func (g *group) addReasoning(r *Record) {
	if r.ReasoningTokens <= 0 && r.ReasoningChunks <= 0 {
		return
	}
	w := &g.wire
	w.reasoningReqs++
	rt := int64(min(r.ReasoningTokens, r.OutputTokens))
	w.reasoningTokens += rt
	w.answerTokens += int64(r.OutputTokens) - rt
	split := min(r.ReasoningChunks, len(r.Chunks))
	for i, c := range r.Chunks {
		h := g.h[hITLAnswer]
		if i < split {
			h = g.h[hITLReasoning]
		}
		if i > 0 {
			h.recordNs(c.T - r.Chunks[i-1].T)
		}
		h.recordValues(0, chunkTokens(c)-1)
	}
}

// reasoning is the group's Reasoning block, nil without reasoning requests. Its
// distributions are the group's histograms of the registry's ttfat, itl_reasoning and
// itl_answer families.
func (g *group) reasoning() *Reasoning {
	w := &g.wire
	if w.reasoningReqs == 0 {
		return nil
	}
	return &Reasoning{
		Requests: w.reasoningReqs, ReasoningTokens: w.reasoningTokens, AnswerTokens: w.answerTokens,
		TTFAT: g.h[hTTFAT].dist(scaleMicrosToMs), ITLReasoning: g.h[hITLReasoning].dist(scaleMicrosToMs),
		ITLAnswer: g.h[hITLAnswer].dist(scaleMicrosToMs),
	}
}

// clientCount is the client's own count of r's output, for comparison with the server's:
// the tokenizer's count; in records written before ClientOutputTokens existed (no
// TokenAttribution either), OutputTokens, as those records were compared. A record counted
// from server usage without a tokenizer has no count of its own.
func clientCount(r *Record) (int, bool) {
	switch {
	case r.ClientOutputTokens > 0:
		return r.ClientOutputTokens, true
	case r.TokenAttribution == "" && r.OutputTokens > 0:
		return r.OutputTokens, true
	}
	return 0, false
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// addProvenance counts a successful record's token provenance into g.
func (s *summarizer) addProvenance(g *group, r *Record) {
	if r.ServerOutputTokens > 0 {
		if own, ok := clientCount(r); ok {
			g.req.TokenCompared++
			g.req.TokenComparedTokens += int64(r.ServerOutputTokens)
			if own != r.ServerOutputTokens {
				g.mismatch++
				g.req.TokenMismatchTokens += int64(abs(own - r.ServerOutputTokens))
			}
		}
	}
	if r.TokenAttribution != "" {
		if g.req.TokenAttribution == nil {
			g.req.TokenAttribution = map[string]int{}
		}
		g.req.TokenAttribution[r.TokenAttribution]++
	}
	g.addReasoning(r)
	if r.UsageRejected != "" {
		g.req.UsageRejected++
		if g.wire.rejectExample == "" {
			g.wire.rejectExample = r.UsageRejected
		}
	}
}

// mergeProvenance adds part's provenance counts to out.
func mergeProvenance(out *Requests, part Requests) {
	if len(part.TokenAttribution) > 0 {
		if out.TokenAttribution == nil {
			out.TokenAttribution = map[string]int{}
		}
		addCounts(out.TokenAttribution, part.TokenAttribution)
	}
	out.UsageRejected += part.UsageRejected
}

func (s *summarizer) usageRejectedWarning(r Requests) []string {
	if r.UsageRejected == 0 {
		return nil
	}
	return []string{fmt.Sprintf("token counts: the server's usage of %d requests is not a plausible token count and was not used for counting (the client's own count was); first: %s",
		r.UsageRejected, s.head.wire.rejectExample)}
}

// ttfatNs is a reasoning request's time to its first answer token (the registry's "ttfat"),
// from the intended send time; ok is false for a request that did not reason first or
// produced no answer.
func ttfatNs(r *Record) (int64, bool) {
	if !r.OK() || r.FirstAnswer <= 0 || (r.ReasoningTokens <= 0 && r.ReasoningChunks <= 0) {
		return 0, false
	}
	return r.FirstAnswer - r.Intended, true
}
