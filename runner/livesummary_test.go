package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// TestSummarizeLiveIsTheFilesSummary: with SummarizeLive, the summary is exactly the one
// Summarize makes of the records file, though the records were handed over by four goroutines
// at once (the file's order is the order the first pass saw them in); a run that fails still
// returns its error, and a run that reports its client CPU is summarized from the file with it.
func TestSummarizeLiveIsTheFilesSummary(t *testing.T) {
	const n = 3000
	reqs := make([]traces.Request, n)
	for i := range reqs {
		reqs[i] = traces.Request{ID: fmt.Sprintf("r%d", i), Arrival: time.Duration(i) * 10 * time.Millisecond, InputTokens: 5, OutputTokens: 1 + i%9, Class: []string{"a", "b", "c"}[i%3]}
	}
	produce := func(cpu float64, fail error) Producer {
		return func(_ context.Context, src traces.Source, sink func(*metrics.Record)) (*Produced, error) {
			rs, _ := src.Requests()
			var wg sync.WaitGroup
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < len(rs); i += 4 {
						r := rs[i]
						t0 := int64(r.Arrival)
						rec := &metrics.Record{ID: r.ID, Class: r.Class, Intended: t0, Dispatched: t0 + int64(i%7)*1000, Sent: t0 + 1e4, Headers: t0 + 2e4,
							InputTokens: 5, OutputTokens: r.OutputTokens, RequestedTokens: r.OutputTokens, TokenSource: metrics.TokensFromUsage, Status: 200}
						at := t0 + int64(20+i%50)*1e6
						for k := 0; k < r.OutputTokens; k++ {
							rec.Chunks = append(rec.Chunks, metrics.Chunk{T: at, Tokens: 1})
							at += int64(5+(i*k)%40) * 1e6
						}
						rec.FirstToken, rec.End = rec.Chunks[0].T, rec.Chunks[len(rec.Chunks)-1].T
						if i%97 == 0 {
							rec.Failure, rec.Status, rec.Chunks, rec.FirstToken = metrics.FailHTTP5xx, 503, nil, 0
						}
						sink(rec)
					}
				}()
			}
			wg.Wait()
			return &Produced{Model: "m", ClientCPUFraction: cpu}, fail
		}
	}
	clock := func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }
	mopts := metrics.Options{SLO: metrics.SLO{TTFT: 40 * time.Millisecond}}
	check := func(cpu float64) {
		dir := filepath.Join(t.TempDir(), "live")
		res, err := Execute(context.Background(), Options{Requests: reqs, OutDir: dir, Metrics: mopts, Now: clock, SummarizeLive: true}, produce(cpu, nil))
		if err != nil {
			t.Fatal(err)
		}
		fo := mopts
		fo.ClientCPUFraction = cpu
		want, err := metrics.Summarize(metrics.FileSource(filepath.Join(dir, RecordsFile)), fo)
		if err != nil {
			t.Fatal(err)
		}
		want.Run, want.Workload, want.Warnings = res.Summary.Run, res.Summary.Workload, res.Summary.Warnings
		got, _ := json.Marshal(res.Summary)
		exp, _ := json.Marshal(want)
		if string(got) != string(exp) {
			t.Errorf("client CPU %g: the live summary differs from the file's", cpu)
		}
		if res.Summary.Requests.Total != n || res.Summary.Client.CPUFraction != cpu {
			t.Errorf("client CPU %g: %d requests, CPU %g", cpu, res.Summary.Requests.Total, res.Summary.Client.CPUFraction)
		}
	}
	check(0)
	check(0.25)
	boom := errors.New("boom")
	if _, err := Execute(context.Background(), Options{Requests: reqs, OutDir: filepath.Join(t.TempDir(), "fail"), Now: clock, SummarizeLive: true}, produce(0, boom)); !errors.Is(err, boom) {
		t.Errorf("a failed run returned %v", err)
	}
}
