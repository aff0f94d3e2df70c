package runner

import (
	"errors"
	"testing"

	"github.com/llmbench/llmbench/traces"
)

// noHold is a trace that refuses to be read whole: a summary that asks for the designed reuse
// must walk it as it is read (a million-request simulation held its trace for this, 744 MB).
type noHold struct{ traces.Source }

func (noHold) Requests() ([]traces.Request, error) {
	return nil, errors.New("the designed reuse read the whole trace into memory")
}

func TestDesignedReuseDoesNotHoldTheTrace(t *testing.T) {
	reqs := []traces.Request{
		{ID: "a", Arrival: 0, InputTokens: 32, OutputTokens: 1, HashIDs: []int64{1, 2}},
		{ID: "b", Arrival: 1, InputTokens: 40, OutputTokens: 1, HashIDs: []int64{1, 2, 3}},
		{ID: "c", Arrival: 2, InputTokens: 7, OutputTokens: 1},
	}
	designed := designedReuse(noHold{traces.FromSlice(reqs)}, nil, 16)
	for _, c := range []struct {
		id            string
		repeat        int
		reused, input int64
		ok            bool
	}{
		{"a", 0, 0, 32, true},
		{"b", 0, 32, 40, true},
		{"b", 1, 40, 40, true},
		{"c", 0, 0, 7, true},
		{"x", 0, 0, 0, false},
	} {
		reused, input, ok := designed(c.id, c.repeat)
		if reused != c.reused || input != c.input || ok != c.ok {
			t.Errorf("%s (repeat %d): %d of %d, %v; want %d of %d, %v", c.id, c.repeat, reused, input, ok, c.reused, c.input, c.ok)
		}
	}
}
