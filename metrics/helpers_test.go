package metrics

import (
	"time"
)

const msNs = int64(time.Millisecond)

// timeline builds a successful Record: sent at intendedMs (no lag, no queue), first chunk
// ttftMs later, then one chunk per gap; tokens[i] is chunk i's token count (1 when tokens is
// nil or short). End is the last chunk's arrival.
func timeline(id string, intendedMs, ttftMs float64, gapsMs []float64, tokens []int32) Record {
	t0 := int64(intendedMs * float64(msNs))
	r := Record{
		ID: id, Intended: t0, Dispatched: t0, Sent: t0, Headers: t0 + 1,
		InputTokens: 100, TokenSource: TokensFromUsage, ServerInputTokens: -1, ServerOutputTokens: -1,
		Status: 200,
	}
	if t0 == 0 {
		// Dispatched/Sent 0 mean "did not happen"; keep the request sent.
		r.Dispatched, r.Sent = 1, 1
	}
	t := t0 + int64(ttftMs*float64(msNs))
	r.FirstToken = t
	out := 0
	for i := 0; i <= len(gapsMs); i++ {
		if i > 0 {
			t += int64(gapsMs[i-1] * float64(msNs))
		}
		k := int32(1)
		if i < len(tokens) {
			k = tokens[i]
		}
		r.Chunks = append(r.Chunks, Chunk{T: t, Tokens: k})
		out += int(k)
	}
	r.End = t
	r.OutputTokens = out
	r.RequestedTokens = out
	return r
}

// constGaps returns n gaps of g ms.
func constGaps(n int, g float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = g
	}
	return out
}

func near(a, b, tol float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= tol
}
