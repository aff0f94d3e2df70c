package traces

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// addFiles adds every file matching pattern to the seed corpus.
func addFiles(f *testing.F, pattern string) {
	f.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files for %s (%v)", pattern, err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// checkValid asserts the invariants every successfully read or imported trace has, and that
// it survives a JSONL round trip unchanged.
func checkValid(t *testing.T, reqs []Request) {
	t.Helper()
	ids := map[string]bool{}
	for i, r := range reqs {
		if r.Arrival < 0 || r.InputTokens < 1 || r.OutputTokens < 1 || r.ID == "" || ids[r.ID] {
			t.Fatalf("invalid request %d: %+v", i, r)
		}
		ids[r.ID] = true
		if i > 0 && r.Arrival < reqs[i-1].Arrival {
			t.Fatalf("requests not sorted at %d", i)
		}
	}
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, reqs); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&buf, "roundtrip", ReadOptions{})
	if err != nil {
		t.Fatalf("re-reading written trace: %v", err)
	}
	want := append([]Request(nil), reqs...)
	clearLines(want)
	if !reflect.DeepEqual(clearLines(back), want) {
		t.Fatalf("round trip changed the trace:\n got %+v\nwant %+v", back, want)
	}
}

func FuzzRead(f *testing.F) {
	addFiles(f, "testdata/*.jsonl")
	f.Add([]byte(`{"arrival_s":1e-9,"input_tokens":1e0,"output_tokens":2,"hash_ids":[-1],"seed":-9223372036854775808}`))
	f.Add([]byte("{\"arrival_s\":0,\"input_tokens\":1,\"output_tokens\":1,\"prompt\":\"\\u0000\\ud800\"}\n#x\n{"))
	f.Add([]byte(`{"arrival_s":0,"input_tokens":1,"output_tokens":1,"messages":[{"role":"user","content":"","images":[{"width":640,"height":480},{"path":"no.png"}]}]}`))
	f.Add([]byte("{\"arrival_s\":0,\"input_tokens\":1,\"output_tokens\":9,\"cancel_after_ms\":250.5}\n{\"arrival_s\":1,\"input_tokens\":1,\"output_tokens\":1,\"cancel_after_ms\":-1}")) // cancellations
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, lenient := range []bool{false, true} {
			reqs, err := Read(bytes.NewReader(data), "fuzz.jsonl", ReadOptions{Lenient: lenient})
			if err != nil {
				continue
			}
			checkValid(t, reqs)
		}
		// The fast path must agree with the token walk on every line it accepts.
		for _, line := range bytes.Split(data, []byte("\n")) {
			line = bytes.TrimSpace(line)
			fast, ok := fastRecord(line, ReadOptions{})
			if !ok {
				continue
			}
			ms, err := parseObject(line)
			if err != nil {
				t.Fatalf("fast path accepted %q, token walk says %v", line, err)
			}
			slow, errs := decodeRecord(ms, ReadOptions{})
			if len(errs) > 0 || !reflect.DeepEqual(fast, slow) {
				t.Fatalf("paths disagree on %q:\nfast %+v\nslow %+v %v", line, fast, slow, errs)
			}
		}
		n, probs, err := Check(bytes.NewReader(data), "fuzz.jsonl", ReadOptions{}, 0)
		if err != nil || n < 0 {
			t.Fatalf("check: %v", err)
		}
		for _, p := range probs {
			if p.Error() == "" {
				t.Fatal("empty problem message")
			}
		}
	})
}

func FuzzReadMsgpack(f *testing.F) {
	var buf bytes.Buffer
	if err := WriteMsgpack(&buf, sampleTrace()[:3]); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(MsgpackMagic + "\xdf\xff\xff\xff\xff"))
	f.Add([]byte(MsgpackMagic + "\x81\xa9arrival_s\xcb"))
	f.Add([]byte(MsgpackMagic + "\xdd\xdd\xdd\xdd\x97\x97\x970")) // declares a 3.7e9-element array
	f.Add([]byte(MsgpackMagic + "\xc6\xff\xff\xff\xff"))          // declares a 4 GiB binary value
	f.Fuzz(func(t *testing.T, data []byte) {
		reqs, err := ReadMsgpack(bytes.NewReader(data), "fuzz.msgpack", ReadOptions{})
		if err == nil {
			checkValid(t, reqs)
		}
	})
}

func fuzzImport(f *testing.F, format, pattern string) {
	addFiles(f, pattern)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opts := range []ImportOptions{{}, {SkipBad: true, DropFailed: true, Limit: 3}} {
			reqs, err := Import(format, bytes.NewReader(data), "fuzz", opts)
			if err == nil {
				checkValid(t, reqs)
			}
		}
	})
}

func FuzzImportAzure(f *testing.F)    { fuzzImport(f, "azure", "testdata/import/azure*.csv") }
func FuzzImportBurstGPT(f *testing.F) { fuzzImport(f, "burstgpt", "testdata/import/burstgpt*.csv") }
func FuzzImportMooncake(f *testing.F) { fuzzImport(f, "mooncake", "testdata/import/mooncake*.jsonl") }
func FuzzImportShareGPT(f *testing.F) { fuzzImport(f, "sharegpt", "testdata/import/sharegpt*.json") }
func FuzzImportToolAgent(f *testing.F) {
	fuzzImport(f, "toolagent", "testdata/import/toolagent*.jsonl")
}
func FuzzImportWeka(f *testing.F) { fuzzImport(f, "weka", "testdata/import/weka*.json*") }
