package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func sampleRecords() []Record {
	return []Record{
		{ID: "r1", Class: "chat", Intended: 0, Dispatched: 10, Sent: 20, Headers: 1000, FirstToken: 5000, End: 9000,
			Chunks:      []Chunk{{T: 5000, Tokens: 1}, {T: 7000, Tokens: 3}, {T: 9000, Tokens: 1}},
			InputTokens: 12, OutputTokens: 5, TokenSource: TokensFromUsage, RequestedTokens: 5, ServerInputTokens: 12, ServerOutputTokens: 5,
			Status: 200, OutputHash: "abc", ResponseID: "cmpl-1"},
		{ID: "r2", Session: "s", Turn: 2, Repeat: 1, Phase: PhaseWarmup, Arm: "B", Intended: 1 << 40, ServerInputTokens: -1, ServerOutputTokens: -1,
			Status: 503, Failure: FailHTTP5xx, Error: "overloaded <b>"},
	}
}

func TestRecordCodecRoundTrip(t *testing.T) {
	for _, r := range sampleRecords() {
		b, err := msgpack.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		var got Record
		if err := msgpack.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if len(r.Chunks) == 0 {
			r.Chunks = got.Chunks // nil and empty decode alike
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
		}
	}
}

// TestRecordCodecCoversEveryField fills every field of Record by reflection, each with its own
// non-zero value, and requires the codec to carry it: a field missing from recordFields (or
// two keys pointing at one field) fails here, without this test naming any field. Each field
// is also sent alone, so an omitted-when-empty key is checked against its neighbours' zeros.
func TestRecordCodecCoversEveryField(t *testing.T) {
	typ := reflect.TypeOf(Record{})
	if got, want := len(recordFields)+1, typ.NumField(); got != want { // +1: chunks
		t.Errorf("the codec has %d keys for Record's %d fields", got, want)
	}
	fill := func(v reflect.Value, i int) {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprintf("%s-%d", typ.Field(i).Name, i))
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(1000*i + 7))
		case reflect.Slice:
			switch f.Type() {
			case reflect.TypeOf([]ToolCall(nil)):
				f.Set(reflect.ValueOf([]ToolCall{{ID: fmt.Sprint("c", i), Name: "f", Arguments: `{"a":1}`}, {Name: "g"}}))
			default:
				f.Set(reflect.ValueOf([]Chunk{{T: int64(i), Tokens: 1}, {T: int64(i) + 5, Tokens: 3}}))
			}
		default:
			t.Fatalf("field %s has kind %s, which this test does not know how to fill; extend it", typ.Field(i).Name, f.Kind())
		}
	}
	roundTrip := func(r Record) Record {
		t.Helper()
		b, err := msgpack.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		var got Record
		if err := unmarshalRecord(b, &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	var all Record
	for i := 0; i < typ.NumField(); i++ {
		fill(reflect.ValueOf(&all).Elem(), i)
		var one Record
		fill(reflect.ValueOf(&one).Elem(), i)
		got := roundTrip(one)
		if len(one.Chunks) == 0 {
			got.Chunks = nil
		}
		if !reflect.DeepEqual(got, one) {
			t.Errorf("field %s alone did not survive the codec:\n got %+v\nwant %+v", typ.Field(i).Name, got, one)
		}
	}
	if got := roundTrip(all); !reflect.DeepEqual(got, all) {
		for i := 0; i < typ.NumField(); i++ {
			if g, w := reflect.ValueOf(got).Field(i), reflect.ValueOf(all).Field(i); !reflect.DeepEqual(g.Interface(), w.Interface()) {
				t.Errorf("field %s: decoded %v, encoded %v", typ.Field(i).Name, g, w)
			}
		}
	}
}

// TestRecordCodecKeysInAnyOrder: a frame written by another msgpack writer, keys in any order,
// decodes like the codec's own.
func TestRecordCodecKeysInAnyOrder(t *testing.T) {
	b, err := msgpack.Marshal(map[string]any{"status": 200, "chunks": []int{5, 1, 3, 2}, "zz_future": "x", "id": "r9", "end": 8, "class": "rag"})
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if err := unmarshalRecord(b, &r); err != nil {
		t.Fatal(err)
	}
	want := Record{ID: "r9", Class: "rag", Status: 200, End: 8, Chunks: []Chunk{{T: 5, Tokens: 1}, {T: 8, Tokens: 2}}}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got %+v\nwant %+v", r, want)
	}
}

// FuzzRecordDecodeReencode: any frame the decoder accepts re-encodes to a frame that decodes
// to the same Record.
func FuzzRecordDecodeReencode(f *testing.F) {
	for _, r := range sampleRecords() {
		b, _ := msgpack.Marshal(&r)
		f.Add(b)
	}
	b, _ := msgpack.Marshal(map[string]any{"id": "x", "future": []any{1.5, "a", map[string]any{"k": []byte{1}}}, "chunks": []int{5, 1, 3, 2}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var first Record
		if unmarshalRecord(data, &first) != nil {
			return
		}
		again, err := msgpack.Marshal(&first)
		if err != nil {
			t.Fatal(err)
		}
		var second Record
		if err := unmarshalRecord(again, &second); err != nil {
			t.Fatalf("re-encoded frame rejected: %v", err)
		}
		if len(first.Chunks) == 0 && len(second.Chunks) == 0 {
			first.Chunks, second.Chunks = nil, nil
		}
		if !reflect.DeepEqual(first, second) {
			t.Fatalf("decode(encode(r)) != r:\n%+v\n%+v", first, second)
		}
	})
}

func TestRecordCodecSkipsUnknownFields(t *testing.T) {
	b, err := msgpack.Marshal(map[string]any{"id": "x", "future_field": []any{1, "two", map[string]int{"a": 3}}, "status": 200})
	if err != nil {
		t.Fatal(err)
	}
	var r, fast Record
	if err := msgpack.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if err := unmarshalRecord(b, &fast); err != nil {
		t.Fatal(err)
	}
	if r.ID != "x" || r.Status != 200 || fast.ID != "x" || fast.Status != 200 {
		t.Fatalf("%+v %+v", r, fast)
	}
}

func TestRecordFileTruncatedKeepsCompleteRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.msgpack")
	w, err := CreateRecordFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := sampleRecords()
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadRecords(path)
	if err != nil || len(got) != 2 || got[0].Chunks[1].T != 7000 {
		t.Fatalf("%d records, %v", len(got), err)
	}
	// Every cut inside the second frame keeps the first record and says the file is truncated.
	firstLen := len(recordMagic) + 4 + int(uint32(full[8])<<24|uint32(full[9])<<16|uint32(full[10])<<8|uint32(full[11]))
	for cut := firstLen + 1; cut < len(full); cut++ {
		os.WriteFile(path, full[:cut], 0o644)
		got, err := ReadRecords(path)
		if !errors.Is(err, ErrTruncated) || len(got) != 1 || got[0].ID != "r1" {
			t.Fatalf("cut at %d: %d records, %v", cut, len(got), err)
		}
	}
	os.WriteFile(path, []byte("NOTMAGIC"), 0o644)
	if _, err := ReadRecords(path); err == nil {
		t.Fatal("bad header accepted")
	}
}

// FuzzRecordReader: any bytes after the header decode to records or a clean error; never a
// panic or an unbounded allocation.
func FuzzRecordReader(f *testing.F) {
	var buf bytes.Buffer
	for _, r := range sampleRecords() {
		b, _ := msgpack.Marshal(&r)
		buf.Write([]byte{byte(len(b) >> 24), byte(len(b) >> 16), byte(len(b) >> 8), byte(len(b))})
		buf.Write(b)
	}
	f.Add(buf.Bytes())
	f.Add([]byte{0, 0, 0, 3, 0x81, 0xa6, 'c'})
	f.Add([]byte{0, 0, 0, 5, 0x81, 0xa6, 'c', 'h', 'u', 'n', 'k', 's', 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		rr, err := NewRecordReader(io.MultiReader(bytes.NewReader([]byte(recordMagic)), bytes.NewReader(data)), "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		var rec Record
		for i := 0; i < 1000; i++ {
			if err := rr.Next(&rec); err != nil {
				return
			}
		}
	})
}
