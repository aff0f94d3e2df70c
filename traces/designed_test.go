package traces

import (
	"maps"
	"testing"
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

// TestDesignedReuseOfFile: the reuse walked from a trace file as it is read equals the one of
// the same requests in memory, for a sorted file (streamed) and an unsorted one (held), with
// equal arrivals and session turns in the walk, primed requests counted first.
func TestDesignedReuseOfFile(t *testing.T) {
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
			got, err := DesignedReuseOf(src, pr, 4)
			if err != nil {
				t.Fatal(err)
			}
			want := DesignedReuseAfter(pr, reqs, 4)
			if len(got) != len(lines) || !maps.Equal(got, want) {
				t.Errorf("%s, %d primed: walked %v, in memory %v", name, len(pr), got, want)
			}
		}
	}
}
