package metrics

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
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

// benchRecord is a successful streamed request of 200 chunks with every field set.
func benchRecord() Record {
	r := Record{ID: "req-000123", Class: "chat", Session: "s-17", Turn: 3, Repeat: 1, Arm: "B",
		Intended: 1_234_567_890, Dispatched: 1_234_600_000, Sent: 1_234_700_000, Headers: 1_240_000_000,
		FirstToken: 1_300_000_000, InputTokens: 812, OutputTokens: 260, TokenSource: TokensFromUsage,
		RequestedTokens: 260, ServerInputTokens: 812, ServerOutputTokens: 260, Status: 200,
		OutputHash: "9f86d081884c7d65", ResponseID: "chatcmpl-8a7b6c5d"}
	t := r.FirstToken
	for i := 0; i < 200; i++ {
		r.Chunks = append(r.Chunks, Chunk{T: t, Tokens: int32(1 + i%3/2)})
		t += 18_000_000 + int64(i%7)*1_000_000
	}
	r.End = t
	return r
}

// BenchmarkRecordEncode is the cost of writing one 200-chunk record frame (as RecordWriter
// does, into a reused buffer).
func BenchmarkRecordEncode(b *testing.B) {
	r := benchRecord()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := enc.Encode(&r); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}

// BenchmarkRecordDecode is the cost of reading one 200-chunk record frame (as every pass over
// requests.msgpack does).
func BenchmarkRecordDecode(b *testing.B) {
	r := benchRecord()
	frame, err := msgpack.Marshal(&r)
	if err != nil {
		b.Fatal(err)
	}
	var got Record
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if err := unmarshalRecord(frame, &got); err != nil {
			b.Fatal(err)
		}
	}
}
