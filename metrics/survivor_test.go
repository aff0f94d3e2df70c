package metrics

import (
	"strings"
	"testing"
)

// TestSurvivorWarning: 14 of 20 requests of an overloaded server timed out waiting for their
// headers after 30 s; the latency percentiles hold the 6 that finished (TTFT 100 ms), and
// the warning counts the others by kind and bounds TTFT from below by their wait. A failure
// that is no wait (a refused connection) is not counted; merging two halves gives the same
// counts without the bound.
func TestSurvivorWarning(t *testing.T) {
	var src SliceSource
	for i := range 20 {
		r := timeline("r", float64(i*10), 100, constGaps(3, 10), nil)
		switch {
		case i >= 6:
			r.Failure, r.Error, r.Status = FailTimeoutHeaders, "no response headers", 0
			r.FirstToken, r.Chunks, r.OutputTokens, r.Headers = 0, nil, 0, 0
			r.End = r.Intended + 30_000*msNs
		}
		src = append(src, r)
	}
	refused := timeline("x", 300, 0, nil, nil)
	refused.Failure, refused.FirstToken, refused.Chunks, refused.OutputTokens, refused.Headers = FailConnect, 0, nil, 0, 0
	src = append(src, refused)
	sum, err := Summarize(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var w string
	for _, x := range sum.Warnings {
		if strings.HasPrefix(x, survivorPrefix) {
			w = x
		}
	}
	for _, want := range []string{"14 of 21 sent requests", "(timeout_headers 14)", "describe the 6 that finished",
		"TTFT P50 is at least 30,0", "(over the finished ones: 100 and 100 ms)"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning lacks %q: %q", want, w)
		}
	}
	if sum.Latency.TTFT.Count != 6 {
		t.Errorf("ttft over %d requests, want the 6 that finished", sum.Latency.TTFT.Count)
	}
	half1, _ := Summarize(src[:10], Options{})
	half2, _ := Summarize(src[10:], Options{})
	merged, err := MergeSummaries(MergeRuns, half1, half2)
	if err != nil {
		t.Fatal(err)
	}
	var mw []string
	for _, x := range merged.Warnings {
		if strings.Contains(x, survivorPrefix) {
			mw = append(mw, x)
		}
	}
	if len(mw) != 1 || !strings.HasPrefix(mw[0], survivorPrefix+" 14 of 21 sent requests") || strings.Contains(mw[0], "at least") {
		t.Errorf("merged survivor warnings %q", mw)
	}
	if s2, _ := Summarize(src[:6], Options{}); len(survivorWarning(s2.Requests, "")) != 0 {
		t.Errorf("a run with no request given up on warns: %v", s2.Warnings)
	}
}
