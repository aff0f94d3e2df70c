package traces

import (
	"reflect"
	"testing"
	"time"
)

func TestPrimeRequestsSharedRuns(t *testing.T) {
	const B = 10
	reqs := []Request{
		{ID: "a1", InputTokens: 40, HashIDs: []int64{1, 2, 3, 4}},
		{ID: "b1", InputTokens: 30, HashIDs: []int64{7, 8, 9}},
		{ID: "a2", InputTokens: 35, HashIDs: []int64{1, 2, 3, 5}},
		{ID: "a3", InputTokens: 50, HashIDs: []int64{1, 2, 6, 7, 8}},
		{ID: "c1", InputTokens: 20, HashIDs: []int64{20, 21}}, // alone, all blocks: nothing shared
		{ID: "d1", InputTokens: 45, HashIDs: []int64{30, 31}}, // alone, a declared prefix
		{ID: "m1", InputTokens: 30, HashIDs: []int64{7, 8, 9}, Messages: []Message{{Role: "user", Content: "x"}}},
		{ID: "b2", InputTokens: 25, HashIDs: []int64{7, 8, 9}}, // the run is capped by its input
		{ID: "n1", InputTokens: 10},
	}
	got := PrimeRequests(reqs, B)
	want := []Request{
		{ID: "prime-0", InputTokens: 20, OutputTokens: 1, HashIDs: []int64{1, 2}, Class: "prime"},
		{ID: "prime-1", InputTokens: 25, OutputTokens: 1, HashIDs: []int64{7, 8, 9}, Class: "prime"},
		{ID: "prime-2", InputTokens: 20, OutputTokens: 1, HashIDs: []int64{30, 31}, Class: "prime"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PrimeRequests:\n got %+v\nwant %+v", got, want)
	}
	// The input slices are not aliased: changing a prime request leaves the trace as it was.
	got[0].HashIDs[0] = 99
	if reqs[0].HashIDs[0] != 1 {
		t.Fatal("PrimeRequests aliased a request's hash ids")
	}
}

// TestDesignedReuseAfterPriming: after priming, a group's first request reuses the shared run
// like the later ones; without priming it reuses nothing. The primed total equals the plain
// walk's plus exactly the first members' shared runs.
func TestDesignedReuseAfterPriming(t *testing.T) {
	const B = 10
	var reqs []Request
	for i := 0; i < 6; i++ {
		g := int64(i % 2)
		reqs = append(reqs, Request{ID: string(rune('a' + i)), Arrival: time.Duration(i) * time.Second, InputTokens: 50,
			HashIDs: []int64{100 + g, 200 + g, 300 + g, 1000 + int64(i), 2000 + int64(i)}})
	}
	primed := PrimeRequests(reqs, B)
	if len(primed) != 2 || primed[0].InputTokens != 30 {
		t.Fatalf("primed %+v", primed)
	}
	plain := DesignedReuseByID(reqs, B)
	after := DesignedReuseAfter(primed, reqs, B)
	for _, r := range reqs {
		wantPlain := int64(30)
		if r.ID == "a" || r.ID == "b" {
			wantPlain = 0
		}
		if plain[r.ID].First != wantPlain || after[r.ID].First != 30 {
			t.Fatalf("%s: plain %d (want %d), primed %d (want 30)", r.ID, plain[r.ID].First, wantPlain, after[r.ID].First)
		}
	}
	if _, ok := after["prime-0"]; ok {
		t.Fatal("a priming request is in the designed map")
	}
}
