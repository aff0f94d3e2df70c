package traces

import "testing"

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
