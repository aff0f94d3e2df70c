package metrics

import (
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkSummarize reports the cost per record of a whole Summarize (two passes, classes,
// SLOs with a per-request ITL P99, time series) over records in memory. Divide ns/op and
// allocs/op by the records/op metric for per-record figures.
func BenchmarkSummarize(b *testing.B) {
	recs := mixedRun(20000, 5)
	opts := Options{SLO: SLO{TTFT: 300 * time.Millisecond, ITLP99: 100 * time.Millisecond}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Summarize(recs, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(recs)), "records/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(recs)), "ns/record")
}

// BenchmarkSummarizePerRecord isolates the per-record work of the first pass on a warm
// summarizer: it must not allocate.
func BenchmarkSummarizePerRecord(b *testing.B) {
	recs := mixedRun(1000, 6)
	s := &summarizer{opts: Options{SLO: SLO{ITLP99: 100 * time.Millisecond}}.withDefaults(), head: newGroup(), classes: map[string]*group{}, phases: map[string]*group{}}
	s.dl = s.opts.deadlines()
	for i := range recs {
		s.first(&recs[i])
	}
	s.ts = newTSBuilder(time.Second, s.maxT)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.first(&recs[i%len(recs)])
		i++
	}
}

// BenchmarkSummarizeFile includes decoding requests.msgpack (two passes).
func BenchmarkSummarizeFile(b *testing.B) {
	recs := mixedRun(2000, 7)
	path := filepath.Join(b.TempDir(), "requests.msgpack")
	w, err := CreateRecordFile(path)
	if err != nil {
		b.Fatal(err)
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Summarize(FileSource(path), Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(recs)), "ns/record")
}

// BenchmarkHistogramRecord is the cost of recording one latency.
func BenchmarkHistogramRecord(b *testing.B) {
	h := newHist()
	b.ReportAllocs()
	v := int64(0)
	for b.Loop() {
		h.recordNs(v)
		v = (v + 7_919_017) % (10 * int64(time.Second))
	}
}

// BenchmarkCompare is a paired comparison of 1,000 requests per side with the default metric
// set and 2,000 resamples.
func BenchmarkCompare(b *testing.B) {
	base := mixedRun(1000, 8)
	cand := mixedRun(1000, 9)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compare([]Source{base}, []Source{cand}, CompareOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
