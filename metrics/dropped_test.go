package metrics

import (
	"fmt"
	"testing"
	"time"
)

// TestDroppedRequestsStandApart: a 20 s trace (10 req/s) stopped after 5 s leaves 150
// requests never sent. They are counted as dropped, not failed, add no tokens, and do not
// stretch the throughput window to their planned send times.
func TestDroppedRequestsStandApart(t *testing.T) {
	var recs SliceSource
	for i := range 200 {
		at := int64(i) * int64(100*time.Millisecond)
		r := Record{ID: fmt.Sprint("r", i), Intended: at, InputTokens: 100, OutputTokens: 10, Phase: PhaseSteady, ServerInputTokens: -1, ServerOutputTokens: -1}
		if i < 50 {
			r.Dispatched, r.Sent, r.Headers, r.FirstToken = at, at, at+1e6, at+2e6
			r.End = at + int64(10*time.Millisecond)
			r.Chunks = []Chunk{{T: at + 2e6, Tokens: 10}}
			r.TokenSource = TokensFromChunks
		} else {
			r.OutputTokens = 0
			r.Failure = FailDropped
			r.Error = "canceled: run interrupted before this request was sent"
		}
		recs = append(recs, r)
	}
	s, err := Summarize(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := s.Requests
	if q.Dropped != 150 || q.Failed != 0 || q.Succeeded != 50 || q.Total != 200 || q.Failures[string(FailDropped)] != 0 {
		t.Fatalf("requests %+v: want 150 dropped apart from 0 failed", q)
	}
	if q.InputTokens != 50*100 {
		t.Errorf("input tokens %d, want %d (dropped requests were never sent)", q.InputTokens, 50*100)
	}
	if got := s.Throughput.RequestsPerS; got < 9.5 || got > 10.5 {
		t.Errorf("throughput %.2f req/s over %.2f s, want about 10 (the window ends with the last sent request)", got, s.Throughput.WindowS)
	}
}
