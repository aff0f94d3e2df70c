package metrics

import "fmt"

// Token provenance of the records: where totals and per-chunk counts came from, and how the
// client's own count compares with the server's.

// wireGroup is a group's provenance state beyond Requests.
type wireGroup struct {
	rejectExample string // the first UsageRejected reason seen
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

// addProvenance counts a successful record's token provenance into g.
func (s *summarizer) addProvenance(g *group, r *Record) {
	if r.ServerOutputTokens > 0 {
		if own, ok := clientCount(r); ok {
			g.req.TokenCompared++
			if own != r.ServerOutputTokens {
				g.mismatch++
			}
		}
	}
	if r.TokenAttribution != "" {
		if g.req.TokenAttribution == nil {
			g.req.TokenAttribution = map[string]int{}
		}
		g.req.TokenAttribution[r.TokenAttribution]++
	}
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
