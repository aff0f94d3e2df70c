package reports

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// bigRun is a synthetic 100,000-request run: a summary with one time-series bucket per
// second over `seconds`, five sampled requests of 8,000 chunks each, a scraped server series
// of one point per second, and 100,000 matched request pairs for a comparison.
func bigRun(t testing.TB, seconds int) (*metrics.Summary, HTMLOptions, *metrics.Comparison) {
	s := fixtureSummary("llama-3.1-70b", "synthetic 100,000-request run")
	s.Requests.Total, s.Requests.Succeeded, s.Requests.Failed = 100000, 99990, 10
	s.TimeSeries = fixtureSeries(seconds)
	const ms = int64(1e6)
	var samples []metrics.Record
	for i := 0; i < 5; i++ {
		r := metrics.Record{ID: fmt.Sprintf("big-%d", i), Intended: 0, Sent: ms, OutputTokens: 8000}
		t := 200 * ms
		for k := 0; k < 8000; k++ {
			r.Chunks = append(r.Chunks, metrics.Chunk{T: t, Tokens: 1})
			t += int64(15+(k*7+i)%13) * ms
			if k%1000 == 999 {
				t += 800 * ms
			}
		}
		r.FirstToken, r.End = r.Chunks[0].T, t
		samples = append(samples, r)
	}
	sv := fixtureServer(seconds)
	recs := make([]metrics.Record, 100000)
	for i := range recs {
		recs[i] = metrics.Record{ID: fmt.Sprintf("r%06d", i), Intended: int64(i) * 20 * ms,
			FirstToken: int64(i)*20*ms + int64(100+i%97)*ms, End: int64(i)*20*ms + int64(2000+i%1999)*ms}
	}
	pairs, err := PairRecords(eachOf(recs), eachOf(recs), 0)
	if err != nil {
		t.Fatal(err)
	}
	js := os.Getenv(EChartsEnv)
	read := os.ReadFile
	if js == "" {
		// Stand in for echarts.min.js (1,034,102 bytes in 5.6.0) so the size is realistic.
		js = "stub"
		read = func(string) ([]byte, error) { return []byte("/* echarts */" + strings.Repeat("x", 1034102)), nil }
	}
	o := HTMLOptions{EChartsJS: js, ReadFile: read, Samples: samples, ServerMetrics: sv, Pairs: pairs, Getenv: noEnv}
	return s, o, fixtureComparison("candidate")
}

func TestReportSizeFor100kRequests(t *testing.T) {
	for _, seconds := range []int{2000, 20000} {
		s, o, c := bigRun(t, seconds)
		var run, cmp bytes.Buffer
		if err := WriteHTML(&run, s, o); err != nil {
			t.Fatal(err)
		}
		if err := WriteComparisonHTML(&cmp, c, o); err != nil {
			t.Fatal(err)
		}
		t.Logf("100,000 requests over %d s: run report %.2f MB, comparison report %.2f MB (ECharts inlined)",
			seconds, float64(run.Len())/1e6, float64(cmp.Len())/1e6)
		const limit = 10 << 20
		if run.Len() > limit || cmp.Len() > limit {
			t.Errorf("report too large: run %d bytes, comparison %d bytes (limit %d)", run.Len(), cmp.Len(), limit)
		}
		if seconds == 20000 && !strings.Contains(run.String(), "Downsampled with LTTB from 20,000 buckets") {
			t.Error("long series were not downsampled")
		}
	}
}

func BenchmarkWriteHTML100k(b *testing.B) {
	s, o, _ := bigRun(b, 2000)
	var buf bytes.Buffer
	b.ResetTimer()
	for range b.N {
		buf.Reset()
		if err := WriteHTML(&buf, s, o); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}
