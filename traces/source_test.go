package traces

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// walk is everything a replay reads from a Source.
type walk struct {
	Len         int
	Stats       Stats
	First, Last time.Duration
	SessionPos  []int
	Sessions    []Request
	SinglePos   []int
	Singles     []Request
}

func walkSource(t *testing.T, s Source) walk {
	t.Helper()
	var w walk
	w.Len, w.Stats = s.Len(), s.Stats()
	w.First, w.Last = s.Span()
	s.Sessions(func(pos int, q *Request) {
		w.SessionPos = append(w.SessionPos, pos)
		w.Sessions = append(w.Sessions, *q)
	})
	if err := s.Singles(func(pos int, q *Request) error {
		w.SinglePos = append(w.SinglePos, pos)
		w.Singles = append(w.Singles, *q)
		return nil
	}); err != nil {
		t.Fatalf("Singles: %v", err)
	}
	return w
}

func TestOpenFileStreamsSortedTracesLikeReadFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"chat-small.jsonl", "sessions-small.jsonl", "prefix-small.jsonl", "mixed-small.jsonl"} {
		path := filepath.Join("examples", name)
		reqs, err := ReadFile(path, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mp := filepath.Join(dir, strings.TrimSuffix(name, ".jsonl")+".msgpack")
		if err := WriteFile(mp, reqs); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, mp} {
			src, err := OpenFile(p, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, streamed := src.(*fileSource); !streamed {
				t.Errorf("%s: a sorted trace is not streamed (%T)", p, src)
			}
			got, want := walkSource(t, src), walkSource(t, FromSlice(reqs))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: the streamed trace differs from the trace in memory:\n got %+v\nwant %+v", p, got.Stats, want.Stats)
			}
			if len(got.Singles)+len(got.Sessions) != len(reqs) {
				t.Errorf("%s: %d singles + %d session turns, want %d requests", p, len(got.Singles), len(got.Sessions), len(reqs))
			}
			all, err := src.Requests()
			if err != nil || !reflect.DeepEqual(all, reqs) {
				t.Errorf("%s: Requests() = %d requests, %v; want ReadFile's %d", p, len(all), err, len(reqs))
			}
		}
	}
}

func writeTrace(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenFileUnsortedIsHeldSorted(t *testing.T) {
	p := writeTrace(t,
		`{"id":"a","arrival_s":2,"input_tokens":1,"output_tokens":1}`,
		`{"id":"b","arrival_s":1,"input_tokens":1,"output_tokens":1}`,
		`{"arrival_s":1,"input_tokens":1,"output_tokens":1}`)
	src, err := OpenFile(p, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := src.(*sliceSource); !ok {
		t.Fatalf("unsorted trace: %T, want it in memory", src)
	}
	var ids []string
	if err := src.Singles(func(_ int, q *Request) error { ids = append(ids, q.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"b", "r3", "a"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("order %v, want %v (arrival order, file order among equal arrivals)", ids, want)
	}
}

func TestOpenFileErrorsAreReadFiles(t *testing.T) {
	cases := [][]string{
		{`{"id":"a","arrival_s":0,"input_tokens":1,"output_tokens":1}`, `{"id":"a","arrival_s":1,"input_tokens":1,"output_tokens":1}`},
		{`{"arrival_s":0,"input_tokens":1,"output_tokens":1}`, `{"id":"r1","arrival_s":1,"input_tokens":1,"output_tokens":1}`},
		{`{"id":"a","arrival_s":0,"input_tokens":1,"output_tokens":1,"session":"s","turn":1}`, `{"id":"b","arrival_s":1,"input_tokens":1,"output_tokens":1,"session":"s","turn":1}`},
		{`{"id":"a","arrival_s":0,"input_tokens":1,"output_tokens":1}`, `{"id":"b","arrival_s":1,"input_tokens":-1,"output_tokens":1}`},
		{`{"id":"a","arrival_s":0,"input_tokens":1,"output_tokens":1}`, `{"id":"b","arrival_s":1,`},
		{`# only a comment`},
	}
	for i, lines := range cases {
		p := writeTrace(t, lines...)
		_, want := ReadFile(p, ReadOptions{})
		_, got := OpenFile(p, ReadOptions{})
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("case %d: OpenFile error %v, want ReadFile's %v", i, got, want)
		}
	}
	if _, err := OpenFile(filepath.Join(t.TempDir(), "missing.jsonl"), ReadOptions{}); err == nil {
		t.Error("a missing file opened")
	}
}

func TestFileSourceNoticesAChangedFile(t *testing.T) {
	p := writeTrace(t,
		`{"id":"a","arrival_s":0,"input_tokens":1,"output_tokens":1}`,
		`{"id":"b","arrival_s":1,"input_tokens":1,"output_tokens":1}`)
	src, err := OpenFile(p, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"id":"c","arrival_s":2,"input_tokens":1,"output_tokens":1}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	err = src.Singles(func(int, *Request) error { return nil })
	if !errors.Is(err, errChanged) {
		t.Errorf("Singles after the file changed: %v, want %v", err, errChanged)
	}
	if _, err := src.Requests(); !errors.Is(err, errChanged) {
		t.Errorf("Requests after the file changed: %v, want %v", err, errChanged)
	}
}

func TestSinglesStopsAtTheCallersError(t *testing.T) {
	p := writeTrace(t,
		`{"id":"a","arrival_s":0,"input_tokens":1,"output_tokens":1}`,
		`{"id":"b","arrival_s":1,"input_tokens":1,"output_tokens":1}`)
	stop := errors.New("stop")
	for _, open := range []func() (Source, error){
		func() (Source, error) { return OpenFile(p, ReadOptions{}) },
		func() (Source, error) { r, err := ReadFile(p, ReadOptions{}); return FromSlice(r), err },
	} {
		src, err := open()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		if err := src.Singles(func(int, *Request) error { n++; return stop }); err != stop || n != 1 {
			t.Errorf("%T: Singles returned %v after %d calls, want the caller's error after 1", src, err, n)
		}
	}
}

func TestStatsBuilderMatchesTheUnsortedSlice(t *testing.T) {
	reqs, err := ReadFile(filepath.Join("examples", "mixed-small.jsonl"), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := ComputeStats(reqs)
	rev := make([]Request, len(reqs))
	for i := range reqs {
		rev[len(reqs)-1-i] = reqs[i]
	}
	if got := ComputeStats(rev); !reflect.DeepEqual(got, want) {
		t.Errorf("stats depend on the slice's order:\n got %+v\nwant %+v", got, want)
	}
	if want.InputTokens.P50 == 0 || want.Burstiness == 0 || len(want.Classes) == 0 {
		t.Errorf("stats look empty: %+v", want)
	}
}

// FuzzOpenFile checks that a trace opened for streaming reads exactly as ReadFile reads it:
// the same error, or the same requests in the same order with the same statistics.
func FuzzOpenFile(f *testing.F) {
	addFiles(f, "testdata/*.jsonl")
	f.Add([]byte(`{"arrival_s":1,"input_tokens":1,"output_tokens":1}` + "\n" + `{"arrival_s":0.5,"input_tokens":1,"output_tokens":1,"session":"s","turn":2}`))
	f.Add([]byte(`{"id":"r2","arrival_s":0,"input_tokens":1,"output_tokens":1}` + "\n" + `{"arrival_s":0,"input_tokens":3,"output_tokens":1,"hash_ids":[1]}`))
	var mp bytes.Buffer
	if err := WriteMsgpack(&mp, sampleTrace()[:3]); err != nil {
		f.Fatal(err)
	}
	f.Add(mp.Bytes())
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		// The same bytes as a JSONL and as a msgpack trace (almost always an error as one of them).
		for _, name := range []string{"fuzz.jsonl", "fuzz.msgpack"} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			reqs, rerr := ReadFile(p, ReadOptions{})
			src, oerr := OpenFile(p, ReadOptions{})
			if (rerr == nil) != (oerr == nil) || (rerr != nil && rerr.Error() != oerr.Error()) {
				t.Fatalf("%s: OpenFile error %v, ReadFile error %v", name, oerr, rerr)
			}
			if rerr != nil {
				continue
			}
			if got, want := walkSource(t, src), walkSource(t, FromSlice(reqs)); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: streamed trace differs:\n got %+v\nwant %+v", name, got, want)
			}
		}
	})
}
