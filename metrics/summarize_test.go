package metrics

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

func TestSummarizeBasicDefinitions(t *testing.T) {
	// Two requests: 200 ms TTFT, four chunks 20 ms apart, the third chunk carrying 3 tokens.
	a := timeline("a", 0, 200, []float64{20, 20, 20}, []int32{1, 1, 3, 1})
	b := timeline("b", 1000, 300, []float64{10}, nil)
	b.Dispatched += 2 * msNs // 2 ms schedule lag
	b.Sent += 5 * msNs       // 3 ms queue
	sum, err := Summarize(SliceSource{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Schema != SummarySchema || sum.Requests.Total != 2 || sum.Requests.Succeeded != 2 {
		t.Fatalf("requests: %+v", sum.Requests)
	}
	if sum.Requests.OutputTokens != 6+2 {
		t.Errorf("output tokens %d", sum.Requests.OutputTokens)
	}
	l := sum.Latency
	if l.TTFT.Count != 2 || !near(l.TTFT.Max, 300, 0.5) || !near(l.TTFT.Min, 200, 0.5) {
		t.Errorf("ttft %+v", l.TTFT)
	}
	// TPOT: a = 60ms/5 = 12 ms; b = 10ms/1 = 10 ms.
	if l.TPOT.Count != 2 || !near(l.TPOT.Max, 12, 0.02) || !near(l.TPOT.Min, 10, 0.02) {
		t.Errorf("tpot %+v", l.TPOT)
	}
	// Per-token ITL: a gives 20,20,20,0,0 and b gives 10: six samples, two zeros.
	if l.ITL.Count != 6 || l.ITL.Min != 0 || !near(l.ITL.Max, 20, 0.03) {
		t.Errorf("itl %+v", l.ITL)
	}
	// Per-chunk ITL: 20,20,20,10.
	if l.ITLChunk.Count != 4 || !near(l.ITLChunk.Min, 10, 0.02) {
		t.Errorf("itl_chunk %+v", l.ITLChunk)
	}
	if l.MaxGap.Count != 2 || !near(l.MaxGap.Max, 20, 0.03) {
		t.Errorf("max_gap %+v", l.MaxGap)
	}
	if !near(l.E2E.Max, 310, 0.5) || !near(l.E2E.Min, 260, 0.5) {
		t.Errorf("e2e %+v", l.E2E)
	}
	if l.Queue.Count != 2 || !near(l.Queue.Max, 3, 0.01) {
		t.Errorf("queue %+v", l.Queue)
	}
	if !near(sum.Client.LagMs.Max, 2, 0.01) || sum.Client.Limited {
		t.Errorf("client %+v", sum.Client)
	}
	if sum.TokensPerChunk.Count != 6 || sum.TokensPerChunk.Max != 3 {
		t.Errorf("tokens per chunk %+v", sum.TokensPerChunk)
	}
	// Window: intended 0 to last end 1310 ms.
	if !near(sum.Throughput.WindowS, 1.31, 1e-9) || !near(sum.Throughput.OutputTokensPerS, 8/1.31, 1e-9) {
		t.Errorf("throughput %+v", sum.Throughput)
	}
	if len(sum.Latency.TTFT.CDF) == 0 {
		t.Error("no CDF")
	}
	if len(sum.ByClass) != 0 {
		t.Errorf("by_class should be empty without classes: %v", sum.ByClass)
	}
	if _, err := json.Marshal(sum); err != nil {
		t.Fatal(err)
	}
}

func TestSummarizeFileSourceAndTruncation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.msgpack")
	w, err := CreateRecordFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		r := timeline(string(rune('a'+i)), float64(i)*100, 50, []float64{10, 10}, nil)
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sum, err := Summarize(FileSource(path), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests.Total != 3 || len(sum.Warnings) != 0 {
		t.Fatalf("total %d warnings %v", sum.Requests.Total, sum.Warnings)
	}
}
