package metrics

import "testing"

func TestShiftMovesSetTimesOnly(t *testing.T) {
	r := Record{Intended: 0, Dispatched: 5, Sent: 0, Headers: 9, FirstToken: 10, End: 30, Chunks: []Chunk{{T: 10, Tokens: 1}, {T: 20, Tokens: 2}}}
	r.OutputTokens = 3
	r.Shift(100)
	want := Record{Intended: 100, Dispatched: 105, Sent: 0, Headers: 109, FirstToken: 110, End: 130, Chunks: []Chunk{{T: 110, Tokens: 1}, {T: 120, Tokens: 2}}}
	if r.Intended != want.Intended || r.Dispatched != want.Dispatched || r.Sent != 0 || r.Headers != want.Headers ||
		r.FirstToken != want.FirstToken || r.End != want.End || r.Chunks[0] != want.Chunks[0] || r.Chunks[1] != want.Chunks[1] {
		t.Fatalf("shifted %+v, want %+v", r, want)
	}
	if a, _ := tpotNs(&r); a != 10 {
		t.Fatalf("TPOT after a shift %d, want (130-110)/2", a)
	}
}

func TestHistogramDiff(t *testing.T) {
	a := &Summary{Histograms: map[string]string{"ttft": "x", "tpot": "y", "e2e": "z"}}
	b := &Summary{Histograms: map[string]string{"ttft": "x", "tpot": "Y", "queue": "q"}}
	if d := HistogramDiff(a, a); d != nil {
		t.Fatalf("a summary differs from itself: %v", d)
	}
	if d := HistogramDiff(a, b); len(d) != 3 {
		t.Fatalf("diff %v, want tpot, e2e and queue", d)
	}
}
