package refengine

import (
	"sort"
	"testing"
	"time"
)

// TestRunUntilReleasesAtFinishes drives a release queue as a session replay does: two chains
// of requests, each next one released the moment the one before it finished plus a delay, and
// requests arriving on their own in between. RunUntil stops at each finish, so every released
// request reaches the engine exactly then, and the others are not held back.
func TestRunUntilReleasesAtFinishes(t *testing.T) {
	var finished []*Timeline
	sim, err := NewSimulation(Config{Seed: 1}, func(pos int, tl *Timeline) { finished = append(finished, tl) })
	if err != nil {
		t.Fatal(err)
	}
	const delay = 40 * time.Millisecond
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	pending := []*SimRequest{
		{ID: "a1", PromptTokens: 300, MaxTokens: 20},
		{ID: "b1", Arrival: ms(30), PromptTokens: 500, MaxTokens: 12},
		{ID: "x", Arrival: ms(150), PromptTokens: 64, MaxTokens: 8},
		{ID: "y", Arrival: ms(151), PromptTokens: 900, MaxTokens: 30},
	}
	next := map[string]string{"a1": "a2", "a2": "a3", "a3": "a4", "b1": "b2", "b2": "b3"}
	pos := 0
	seen := 0
	for len(pending) > 0 || sim.InFlight() > 0 {
		sort.SliceStable(pending, func(i, j int) bool { return pending[i].Arrival < pending[j].Arrival })
		at := time.Duration(1 << 62)
		if len(pending) > 0 {
			at = pending[0].Arrival
		}
		reached := sim.RunUntil(at)
		for ; seen < len(finished); seen++ {
			tl := finished[seen]
			if n, ok := next[tl.ID]; ok {
				pending = append(pending, &SimRequest{ID: n, Arrival: tl.Finish + delay, PromptTokens: 200, MaxTokens: 10})
			}
		}
		if reached < at {
			continue
		}
		if err := sim.Add(pos, pending[0]); err != nil {
			t.Fatal(err)
		}
		pos++
		pending = pending[1:]
	}
	if _, err := sim.Finish(); err != nil {
		t.Fatal(err)
	}
	byID := map[string]*Timeline{}
	for _, tl := range finished {
		byID[tl.ID] = tl
	}
	if len(byID) != 9 {
		t.Fatalf("%d finished", len(byID))
	}
	for prev, cur := range next {
		if byID[cur].Arrival != byID[prev].Finish+delay {
			t.Errorf("%s arrived %v, want %s's finish %v + %v", cur, byID[cur].Arrival, prev, byID[prev].Finish, delay)
		}
	}
	if byID["x"].Arrival != ms(150) || byID["y"].Arrival != ms(151) || byID["b1"].Arrival != ms(30) {
		t.Errorf("own arrivals moved: %v %v %v", byID["x"].Arrival, byID["y"].Arrival, byID["b1"].Arrival)
	}
}
