package traces

import (
	"runtime"
	"strconv"
	"testing"
	"time"
)

// Two prefix groups and a growing session with 4-token blocks: the designed reuse of each
// request is what the earlier requests sent of its block chain.
func TestDesignedReuseByID(t *testing.T) {
	reqs := []Request{
		// listed out of arrival order: the walk sorts by arrival
		{ID: "s2", Arrival: 3, InputTokens: 14, HashIDs: []int64{1, 2, 3, 9}},
		{ID: "a", Arrival: 0, InputTokens: 10, HashIDs: []int64{1, 2, 3}},
		{ID: "b", Arrival: 1, InputTokens: 8, HashIDs: []int64{1, 2}},
		{ID: "c", Arrival: 2, InputTokens: 8, HashIDs: []int64{5, 2}},
		{ID: "d", Arrival: 4, InputTokens: 12, HashIDs: []int64{1, 2, 3}},
		{ID: "plain", Arrival: 5, InputTokens: 7},
	}
	got := DesignedReuseByID(reqs, 4)
	want := map[string]DesignedReuse{
		"a":     {First: 0, Again: 10, Input: 10},
		"b":     {First: 8, Again: 8, Input: 8},
		"c":     {First: 0, Again: 8, Input: 8},    // block 2 under another root is another chain
		"s2":    {First: 10, Again: 14, Input: 14}, // a's 2-token third block: 4+4+2, then stops
		"d":     {First: 12, Again: 12, Input: 12}, // s2 covered the third block whole
		"plain": {First: 0, Again: 0, Input: 7},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d requests, want %d", len(got), len(want))
	}
	var sum int64
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: got %+v, want %+v", id, got[id], w)
		}
		sum += got[id].First
	}
	if st := ComputeStatsBlocks(reqs, 4); st.PrefixReuseTokens != sum {
		t.Errorf("trace stats reuse %d, per-request sum %d", st.PrefixReuseTokens, sum)
	}
}

// TestIndexDesignedReuseOfFile: the reuse walked from a trace file as it is read equals the one of
// the same requests in memory, for a sorted file (streamed) and an unsorted one (held), with
// equal arrivals and session turns in the walk, primed requests counted first.
func TestIndexDesignedReuseOfFile(t *testing.T) {
	sorted := []string{
		`{"id":"a","arrival_s":0,"input_tokens":10,"output_tokens":1,"hash_ids":[1,2,3]}`,
		`{"id":"s1","arrival_s":0,"input_tokens":8,"output_tokens":1,"hash_ids":[1,2],"session":"x","turn":1}`,
		`{"id":"b","arrival_s":1,"input_tokens":8,"output_tokens":1,"hash_ids":[1,2]}`,
		`{"id":"c","arrival_s":1,"input_tokens":8,"output_tokens":1,"hash_ids":[5,2]}`,
		`{"id":"s2","arrival_s":3,"input_tokens":14,"output_tokens":1,"hash_ids":[1,2,3,9],"session":"x","turn":2}`,
		`{"id":"d","arrival_s":4,"input_tokens":12,"output_tokens":1,"hash_ids":[1,2,3]}`,
		`{"id":"plain","arrival_s":5,"input_tokens":7,"output_tokens":1}`,
	}
	unsorted := append([]string{sorted[len(sorted)-1]}, sorted[:len(sorted)-1]...)
	primed := []Request{{ID: "prime-0", InputTokens: 8, OutputTokens: 1, HashIDs: []int64{5, 2}}}
	for name, lines := range map[string][]string{"sorted": sorted, "unsorted": unsorted} {
		src, err := OpenFile(writeTrace(t, lines...), ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		reqs, err := src.Requests()
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range [][]Request{nil, primed} {
			x, err := IndexDesignedReuse(src, pr, 4)
			if err != nil {
				t.Fatal(err)
			}
			want := DesignedReuseAfter(pr, reqs, 4)
			if len(want) != len(lines) {
				t.Fatalf("%s: %d IDs in the map of %d requests", name, len(want), len(lines))
			}
			for id, w := range want {
				if got, ok := x.Lookup(id); !ok || got != w {
					t.Errorf("%s, %d primed, %s: walked %+v (%v), in memory %+v", name, len(pr), id, got, ok, w)
				}
			}
			for _, id := range []string{"", "a0", "prime-0", "s"} {
				if got, ok := x.Lookup(id); ok {
					t.Errorf("%s: %q found (%+v), not in the trace", name, id, got)
				}
			}
		}
	}
}

// TestIndexDesignedReuseRepeatedID: requests in memory may repeat an ID; the index keeps the
// last one walked, as DesignedReuseAfter's map does.
func TestIndexDesignedReuseRepeatedID(t *testing.T) {
	reqs := []Request{
		{ID: "x", Arrival: 2, InputTokens: 9, HashIDs: []int64{1, 2, 3}},
		{ID: "x", Arrival: 0, InputTokens: 8, HashIDs: []int64{1, 2}},
		{ID: "y", Arrival: 1, InputTokens: 4},
		{ID: "x", Arrival: 1, InputTokens: 6, HashIDs: []int64{1, 2}},
	}
	x, err := IndexDesignedReuse(FromSlice(reqs), nil, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := DesignedReuseAfter(nil, reqs, 4)
	if w := want["x"]; w != (DesignedReuse{First: 8, Again: 9, Input: 9}) {
		t.Fatalf("the map keeps %+v for x", w)
	}
	for id, w := range want {
		if got, ok := x.Lookup(id); !ok || got != w {
			t.Errorf("%s: index %+v (%v), map %+v", id, got, ok, w)
		}
	}
}

// TestDesignedIndexIsCompact: the index a summary holds for the whole run costs about 40 bytes
// and the ID's bytes per request (a map by ID took 120 for a million requests of a simulation).
func TestDesignedIndexIsCompact(t *testing.T) {
	const n = 200_000
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = Request{ID: "r" + strconv.Itoa(i), Arrival: time.Duration(i) * time.Millisecond, InputTokens: 1000, OutputTokens: 10}
	}
	src := FromSlice(reqs)
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	x, err := IndexDesignedReuse(src, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	per := (heap() - before) / n
	t.Logf("%d bytes a request", per)
	if per > 64 {
		t.Errorf("the designed index holds %d bytes a request, want ≤ 64", per)
	}
	if d, ok := x.Lookup("r4321"); !ok || d.Input != 1000 {
		t.Errorf("r4321: %+v, %v", d, ok)
	}
	runtime.KeepAlive(reqs)
}
