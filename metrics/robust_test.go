package metrics

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummarizeEmptyAndOddRecords(t *testing.T) {
	empty, err := Summarize(SliceSource{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if empty.Requests.Total != 0 || !strings.Contains(strings.Join(empty.Warnings, " "), "no steady-state requests") {
		t.Fatalf("%+v %v", empty.Requests, empty.Warnings)
	}
	if _, err := json.Marshal(empty); err != nil {
		t.Fatal(err)
	}
	// Clock oddities: chunks out of order, an end before the first token, a first token
	// before the intended time, a ten-hour request, zero-token chunks. Nothing may panic,
	// and every value must stay inside the histogram range.
	odd := timeline("odd", 100, 50, []float64{-30, 10, 36_000_000}, []int32{0, -2, 1, 1})
	odd.End = odd.FirstToken - 1
	early := timeline("early", 1000, -20, []float64{5}, nil)
	sum, err := Summarize(SliceSource{odd, early}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Latency.TTFT.Min != 0 || sum.Latency.ITLChunk.Max > 3_600_000*1.001 {
		t.Errorf("clamping: %+v %+v", sum.Latency.TTFT, sum.Latency.ITLChunk)
	}
	if _, err := json.Marshal(sum); err != nil {
		t.Fatal(err)
	}
}

func TestSummarizeKeepsRecordsOfTruncatedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.msgpack")
	w, err := CreateRecordFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		r := timeline(string(rune('a'+i)), float64(i)*100, 50, []float64{10, 10}, nil)
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)-7], 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := Summarize(FileSource(path), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests.Total != 3 || !strings.Contains(strings.Join(sum.Warnings, " "), "records file truncated") {
		t.Fatalf("total %d warnings %v", sum.Requests.Total, sum.Warnings)
	}
	// A pooled source keeps going after a truncated part.
	err = MultiSource(FileSource(path), SliceSource{timeline("z", 0, 1, nil, nil)}).Each(func(*Record) error { return nil })
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("multi: %v", err)
	}
	n := 0
	_ = MultiSource(FileSource(path), SliceSource{timeline("z", 0, 1, nil, nil)}).Each(func(*Record) error { n++; return nil })
	if n != 4 {
		t.Fatalf("multi yielded %d", n)
	}
	if _, err := Summarize(FileSource(filepath.Join(t.TempDir(), "missing")), Options{}); err == nil {
		t.Fatal("missing file accepted")
	}
}

// recordsFromBytes turns fuzz input into records: a first byte choosing the time scale (a
// shift of 0 to 27 bits), then signed 16-bit little-endian fields, 8 or more per record. Two
// bytes per field keep inputs short (see FuzzSummarize); scaled, they still reach negative
// times and values past the histograms' one-hour range.
func recordsFromBytes(data []byte) SliceSource {
	var out SliceSource
	if len(data) == 0 {
		return out
	}
	shift := uint(data[0] % 28)
	data = data[1:]
	next := func() int64 {
		if len(data) < 2 {
			data = nil
			return 0
		}
		v := int64(int16(binary.LittleEndian.Uint16(data)))
		data = data[2:]
		return v
	}
	at := func() int64 { return next() << shift }
	for len(data) >= 2 && len(out) < 64 {
		r := Record{ID: string(rune('a' + len(out)%26))}
		r.Intended = at()
		r.Dispatched = r.Intended + at()
		r.Sent = r.Dispatched + at()
		r.FirstToken = r.Sent + at()
		n := int(uint64(next()) % 40)
		t := r.FirstToken
		for i := 0; i < n; i++ {
			t += at()
			r.Chunks = append(r.Chunks, Chunk{T: t, Tokens: int32(next() % 5)})
			r.OutputTokens += 1
		}
		r.End = t + at()
		f := next()
		switch uint64(f) % 7 {
		case 1:
			r.Failure = FailHTTP5xx
		case 2:
			r.Phase = PhaseWarmup
		case 3:
			r.Phase = PhaseCooldown
		case 4:
			r.Class = "c"
		case 5:
			r.Failure = FailDropped
		}
		r.InputTokens = int(uint64(f) % 100000)
		r.ServerOutputTokens = int(f % 50)
		out = append(out, r)
	}
	return out
}

// FuzzSummarize's seeds are short (one to three records): every input that finds new
// coverage is minimized byte by byte, and a Summarize costs about as much for one record as
// for sixty (its histograms dominate), so short inputs let it explore within CI's seconds.
func FuzzSummarize(f *testing.F) {
	f.Add([]byte{20, 1, 0, 2, 0, 3, 0, 4, 0, 2, 0, 5, 0, 1, 0, 6, 0, 7, 0, 0, 0})
	f.Add([]byte("\x14\x01\x02\x03\x04\x05\x06\x07\x08\x01\x02\x03\x04\x05\x06\x07\x08\x01\x02\x03\x04\x05\x06\x07\x08\x01\x02\x03\x04\x05\x06\x07\x08\x01\x02\x03\x04\x05\x06\x07\x08"))
	f.Add([]byte("\x1b\xff\xfe\x80\x00\x10\x20\x7f\x00\xff\xfe\x80\x00\x10\x20\x7f\x00\xff\xfe\x80\x00\x10\x20"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs := recordsFromBytes(data)
		sum, err := Summarize(recs, Options{SLO: SLO{TTFT: 1e9, ITLP99: 1e8, MaxGap: 1e9}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(sum); err != nil {
			t.Fatalf("summary does not serialize: %v", err)
		}
		for _, d := range []Dist{sum.Latency.TTFT, sum.Latency.ITL, sum.Latency.E2E, sum.Latency.TPOT} {
			if d.P50 > d.P99 || d.P99 > d.Max || d.Min > d.P50 {
				t.Fatalf("unordered percentiles %+v", d)
			}
		}
		if sum.Goodput.Met > sum.Requests.Succeeded || sum.Requests.Succeeded+sum.Requests.Failed+sum.Requests.Dropped != sum.Requests.Total {
			t.Fatalf("counts %+v %+v", sum.Requests, sum.Goodput)
		}
	})
}

// FuzzCompareRecords compares the two halves of the records FuzzSummarize builds (a target of
// its own: a comparison costs three summaries, and FuzzSummarize stays cheap per execution).
func FuzzCompareRecords(f *testing.F) {
	f.Add([]byte("\x14\x01\x02\x03\x04\x05\x06\x07\x08\x01\x02\x03\x04\x05\x06\x07\x08\x01\x02\x03\x04\x05\x06\x07\x08\x01\x02\x03\x04\x05\x06\x07\x08\x01\x02\x03\x04\x05\x06\x07\x08"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs := recordsFromBytes(data)
		if len(recs) < 2 {
			return
		}
		c, err := Compare([]Source{recs[:len(recs)/2]}, []Source{recs[len(recs)/2:]}, CompareOptions{Resamples: 20})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(c); err != nil {
			t.Fatalf("comparison does not serialize: %v", err)
		}
	})
}
