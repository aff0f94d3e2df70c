package metrics

import (
	"testing"
	"time"
)

func TestReplayLength(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		first, last time.Duration
		n           int
		want        time.Duration
	}{
		{0, 9 * s, 10, 10 * s},       // ten arrivals one second apart: ten one-second slots
		{2 * s, 10 * s, 5, 12 * s},   // mean gap 2 s after the last arrival
		{3 * s, 3 * s, 1, 3 * s},     // one request: its arrival
		{4 * s, 4 * s, 3, 4 * s},     // all at once: no gap
		{0, 0, 0, 0},                 // empty
		{0, 999 * s, 1000, 1000 * s}, // long trace
		{s, s + 10*time.Millisecond, 11, s + 11*time.Millisecond},
	} {
		if got := ReplayLength(c.first, c.last, c.n); got != c.want {
			t.Errorf("ReplayLength(%v, %v, %d) = %v, want %v", c.first, c.last, c.n, got, c.want)
		}
	}
}

func TestPhaseOf(t *testing.T) {
	s := time.Second
	end := 10 * s
	for _, c := range []struct {
		t, warmup, cooldown time.Duration
		want                string
	}{
		{0, 0, 0, PhaseSteady},
		{0, s, 0, PhaseWarmup},
		{s - 1, s, 0, PhaseWarmup},
		{s, s, 0, PhaseSteady},
		{8*s - 1, 0, 2 * s, PhaseSteady},
		{8 * s, 0, 2 * s, PhaseCooldown}, // the window is [end-cooldown, ...)
		{11 * s, 0, 2 * s, PhaseCooldown},
		{11 * s, 0, 0, PhaseSteady},        // no cool-down given: nothing is cool-down
		{3 * s, 5 * s, 8 * s, PhaseWarmup}, // overlapping windows: warm-up wins
		{6 * s, 5 * s, 8 * s, PhaseCooldown},
	} {
		if got := PhaseOf(c.t, c.warmup, c.cooldown, end); got != c.want {
			t.Errorf("PhaseOf(%v, warmup %v, cooldown %v, end %v) = %q, want %q", c.t, c.warmup, c.cooldown, end, got, c.want)
		}
	}
}
