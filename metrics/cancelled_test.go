package metrics

import (
	"fmt"
	"testing"
	"time"
)

// cancelMix is 10 requests of 20 tokens with a 100 ms TTFT, 4 failures (HTTP 503) and 6
// requests cancelled after 5 tokens, their first token 3 s late: were they counted as
// successes, TTFT p99 would be 3 s and goodput's denominator 20.
func cancelMix() SliceSource {
	var recs SliceSource
	for i := range 10 {
		recs = append(recs, timeline(fmt.Sprint("ok", i), float64(i*100), 100, constGaps(19, 10), nil))
	}
	for i := range 4 {
		r := timeline(fmt.Sprint("fail", i), float64(i*100), 100, nil, nil)
		r.Chunks, r.FirstToken, r.OutputTokens = nil, 0, 0
		r.Failure, r.Status, r.Error = FailHTTP5xx, 503, "overloaded"
		recs = append(recs, r)
	}
	for i := range 6 {
		r := timeline(fmt.Sprint("cancel", i), float64(i*100), 3000, constGaps(4, 10), nil)
		r.Failure, r.Error = KindCancelled, "cancelled by the client after 3.04 s (cancel_after_ms)"
		recs = append(recs, r)
	}
	return recs
}

// TestCancelledIsAnOutcomeOfItsOwn: cancelled requests are counted apart from successes and
// failures, keep their tokens, stay out of the latency percentiles and out of goodput's
// denominator, in the headline, in a class, and through a merge of two shards.
func TestCancelledIsAnOutcomeOfItsOwn(t *testing.T) {
	recs := cancelMix()
	s, err := Summarize(recs, Options{SLO: SLO{TTFT: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	q := s.Requests
	if q.Total != 20 || q.Succeeded != 10 || q.Failed != 4 || q.Cancelled != 6 {
		t.Fatalf("requests %+v: want 10 succeeded, 4 failed, 6 cancelled of 20", q)
	}
	if q.Failures[string(KindCancelled)] != 0 || len(q.Failures) != 1 {
		t.Errorf("failures %v: cancelled must not be a failure kind", q.Failures)
	}
	if q.OutputTokens != 10*20+6*5 {
		t.Errorf("output tokens %d, want %d (the cancelled requests' 5 tokens each kept)", q.OutputTokens, 10*20+6*5)
	}
	if s.Latency.TTFT.Count != 10 || s.Latency.TTFT.Max > 150 {
		t.Errorf("TTFT %+v: want only the 10 successes (max 100 ms), cancelled requests excluded", s.Latency.TTFT)
	}
	if s.Goodput.Met != 10 || !near(s.Goodput.Fraction, 10.0/14, 1e-9) {
		t.Errorf("goodput met %d fraction %v, want 10 of 14 (cancelled out of the denominator)", s.Goodput.Met, s.Goodput.Fraction)
	}
	var failedTS int
	for _, n := range s.TimeSeries.Failed {
		failedTS += n
	}
	if failedTS != 4 {
		t.Errorf("time series failed %d, want 4", failedTS)
	}
	half := [2]SliceSource{}
	for i, r := range recs {
		half[i%2] = append(half[i%2], r)
	}
	var parts []*Summary
	for _, h := range half {
		p, err := Summarize(h, Options{SLO: SLO{TTFT: 500 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
	}
	m, err := MergeSummaries(MergeShards, parts...)
	if err != nil {
		t.Fatal(err)
	}
	if m.Requests.Cancelled != 6 || m.Requests.Failed != 4 || !near(m.Goodput.Fraction, 10.0/14, 1e-9) {
		t.Errorf("merged requests %+v goodput %v: want 6 cancelled, 4 failed, goodput 10/14", m.Requests, m.Goodput.Fraction)
	}
}
