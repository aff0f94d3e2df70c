package metrics

import (
	"testing"
	"time"
)

// TestSLOCheckAgreesWithSummarize: counting records with SLOCheck gives the goodput Summarize
// reports, per-class SLOs and failures included.
func TestSLOCheckAgreesWithSummarize(t *testing.T) {
	var recs []Record
	ms := int64(time.Millisecond)
	for i := 0; i < 400; i++ {
		r := Record{ID: "r", Class: []string{"chat", "rag"}[i%2], Intended: int64(i) * 10 * ms, Status: 200,
			InputTokens: 10, OutputTokens: 5, TokenSource: TokensFromUsage}
		t0 := r.Intended + int64(50+i%300)*ms
		for k := 0; k < 5; k++ {
			r.Chunks = append(r.Chunks, Chunk{T: t0 + int64(k*(20+i%70))*ms, Tokens: 1})
		}
		r.FirstToken, r.End = r.Chunks[0].T, r.Chunks[4].T
		if i%37 == 0 {
			r.Failure = FailHTTP5xx
		}
		recs = append(recs, r)
	}
	o := Options{SLO: SLO{TTFT: 200 * time.Millisecond, TPOT: 60 * time.Millisecond},
		ClassSLO: map[string]SLO{"rag": {TTFT: 300 * time.Millisecond, MaxGap: 70 * time.Millisecond}}}
	sum, err := Summarize(SliceSource(recs), o)
	if err != nil {
		t.Fatal(err)
	}
	c := NewSLOCheck(o)
	met := 0
	for i := range recs {
		if c.Meets(&recs[i]) {
			met++
		}
	}
	if met != sum.Goodput.Met || met == 0 || met == len(recs) {
		t.Errorf("SLOCheck counts %d of %d, Summarize %d", met, len(recs), sum.Goodput.Met)
	}
}
