package traces

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func ids(reqs []Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.ID)
	}
	return out
}

func toolTrace() []Request {
	return []Request{
		{ID: "a", Arrival: 0, InputTokens: 1, OutputTokens: 1, Class: "chat"},
		{ID: "b", Arrival: 1 * time.Second, InputTokens: 1, OutputTokens: 1, Class: "rag", Session: "s", Turn: 1},
		{ID: "c", Arrival: 2 * time.Second, InputTokens: 1, OutputTokens: 1, Class: "code", Session: "s", Turn: 2, Think: time.Second},
		{ID: "d", Arrival: 4 * time.Second, InputTokens: 1, OutputTokens: 1},
	}
}

func TestScale(t *testing.T) {
	in := toolTrace()
	out, err := Scale(in, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if out[3].Arrival != 2*time.Second || out[2].Think != 500*time.Millisecond || in[3].Arrival != 4*time.Second {
		t.Fatalf("scale: %+v (input changed: %v)", out, in[3].Arrival)
	}
	for _, f := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, err := Scale(in, f); err == nil {
			t.Errorf("factor %v accepted", f)
		}
	}
	r, err := ScaleToRate(in, 3) // current rate 3 gaps / 4 s = 0.75/s -> factor 0.25
	if err != nil {
		t.Fatal(err)
	}
	if got := ComputeStats(r).RatePerS; math.Abs(got-3) > 1e-9 {
		t.Fatalf("rate after ScaleToRate = %v", got)
	}
	if _, err := ScaleToRate(in[:1], 3); err == nil {
		t.Fatal("single-request trace scaled to a rate")
	}
}

func TestSlice(t *testing.T) {
	out, err := Slice(toolTrace(), time.Second, 4*time.Second, true)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ids(out), []string{"b", "c"}) || out[0].Arrival != 0 || out[1].Arrival != time.Second {
		t.Fatalf("slice: %+v", out)
	}
	out, _ = Slice(toolTrace(), time.Second, 0, false)
	if !reflect.DeepEqual(ids(out), []string{"b", "c", "d"}) || out[0].Arrival != time.Second {
		t.Fatalf("open slice: %+v", out)
	}
	if _, err := Slice(toolTrace(), 2*time.Second, time.Second, false); err == nil {
		t.Fatal("end before start accepted")
	}
}

func TestSampleKeepsSessionsAndIsDeterministic(t *testing.T) {
	var reqs []Request
	for i := 0; i < 200; i++ {
		r := Request{ID: string(rune(0x100 + i)), Arrival: time.Duration(i) * time.Millisecond, InputTokens: 1, OutputTokens: 1}
		if i%2 == 0 && i < 100 { // 50 sessions of two turns: requests i and i+1
			r.Session = r.ID
		}
		if i%2 == 1 && i < 100 {
			r.Session = reqs[i-1].Session
		}
		reqs = append(reqs, r)
	}
	// 150 units: 50 sessions + 100 single requests.
	a, err := Sample(reqs, SampleOptions{Fraction: 0.2, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Sample(reqs, SampleOptions{Fraction: 0.2, Seed: 7})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed gave different samples")
	}
	sessions := map[string]int{}
	units := 0
	for i, r := range a {
		if i > 0 && r.Arrival < a[i-1].Arrival {
			t.Fatal("sample is out of order")
		}
		if r.Session != "" {
			sessions[r.Session]++
			if sessions[r.Session] == 1 {
				units++
			}
		} else {
			units++
		}
	}
	if units != 30 {
		t.Fatalf("kept %d units, want 30", units)
	}
	for s, n := range sessions {
		if n != 2 {
			t.Fatalf("session %q kept %d of 2 turns", s, n)
		}
	}
	c, _ := Sample(reqs, SampleOptions{N: 1000, Seed: 1})
	if len(c) != len(reqs) {
		t.Fatalf("N above the unit count kept %d", len(c))
	}
	for _, o := range []SampleOptions{{}, {N: 1, Fraction: 0.5}, {Fraction: 1.5}} {
		if _, err := Sample(reqs, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

func TestFilter(t *testing.T) {
	out, _ := Filter(toolTrace(), []string{"rag", "code"}, false)
	if !reflect.DeepEqual(ids(out), []string{"b", "c"}) {
		t.Fatalf("filter: %v", ids(out))
	}
	out, _ = Filter(toolTrace(), []string{"rag", ""}, true)
	if !reflect.DeepEqual(ids(out), []string{"a", "c"}) {
		t.Fatalf("exclude: %v", ids(out))
	}
	if _, err := Filter(toolTrace(), nil, false); err == nil {
		t.Fatal("empty class list accepted")
	}
}
