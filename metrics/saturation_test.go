package metrics

import (
	"strings"
	"testing"
	"time"
)

// queueSeries is the series of a deterministic fluid queue on a virtual clock: requests sent
// at offered per second, served at most capacity per second after a service time of service,
// each bucket's median TTFT the wait of the requests finishing then plus base.
func queueSeries(seconds int, offered, capacity float64, base time.Duration) []SaturationSample {
	var out []SaturationSample
	var sent, done, queue float64
	for s := 1; s <= seconds; s++ {
		sent += offered
		queue += offered
		served := min(queue, capacity)
		queue -= served
		done += served
		wait := time.Duration(queue / capacity * float64(time.Second))
		out = append(out, SaturationSample{At: time.Duration(s) * time.Second, Sent: int64(sent), Done: int64(done), TTFTP50: base + wait})
	}
	return out
}

// firstSaturated is when a detector fed series bucket by bucket first judges it saturated
// (-1: never).
func firstSaturated(series []SaturationSample, rule SaturationRule) (time.Duration, SaturationVerdict) {
	for i := range series {
		if v := JudgeSaturation(series[:i+1], rule); v.Saturated {
			return series[i].At, v
		}
	}
	return -1, SaturationVerdict{}
}

func TestJudgeSaturationQueues(t *testing.T) {
	cases := []struct {
		name              string
		offered, capacity float64
		base              time.Duration
		want              bool
	}{
		{"under capacity", 8, 10, 200 * time.Millisecond, false},
		{"at capacity", 10, 10, 200 * time.Millisecond, false},
		{"under capacity, slow prefill", 8, 10, 4 * time.Second, false},
		{"twice capacity", 20, 10, 200 * time.Millisecond, true},
		{"ten times capacity", 100, 10, 200 * time.Millisecond, true},
	}
	for _, c := range cases {
		at, v := firstSaturated(queueSeries(120, c.offered, c.capacity, c.base), SaturationRule{})
		if (at >= 0) != c.want {
			t.Errorf("%s: saturated at %v, want saturated %v (%+v)", c.name, at, c.want, v)
			continue
		}
		if !c.want {
			continue
		}
		if at < DefaultSaturationMinTime {
			t.Errorf("%s: judged at %v, before the minimum time", c.name, at)
		}
		want := OverSaturated(v.OfferedPerS, v.CompletedPerS)
		if !strings.HasPrefix(v.Reason, want) || v.CompletedPerS > c.capacity*1.01 || v.OfferedPerS < c.offered*0.99 {
			t.Errorf("%s: verdict %+v", c.name, v)
		}
	}
}

// TestJudgeSaturationNeedsEveryCondition: a series that meets all conditions but one is not
// saturated.
func TestJudgeSaturationNeedsEveryCondition(t *testing.T) {
	base := queueSeries(60, 20, 10, 200*time.Millisecond)
	if v := JudgeSaturation(base, SaturationRule{}); !v.Saturated {
		t.Fatalf("base series not saturated: %+v", v)
	}
	mutate := map[string]func(s []SaturationSample){
		"TTFT flat": func(s []SaturationSample) {
			for i := range s {
				s[i].TTFTP50 = 5 * time.Second
			}
		},
		"TTFT low": func(s []SaturationSample) {
			for i := range s {
				s[i].TTFTP50 = time.Duration(i) * time.Millisecond
			}
		},
		"completions keep up": func(s []SaturationSample) {
			for i := range s {
				s[i].Done = s[i].Sent - int64(i)/10 // in flight creeps up, completions ≈ sends
			}
		},
		"no first tokens": func(s []SaturationSample) {
			for i := range s {
				s[i].TTFTP50 = -1
			}
		},
	}
	for name, m := range mutate {
		s := append([]SaturationSample(nil), base...)
		m(s)
		if v := JudgeSaturation(s, SaturationRule{}); v.Saturated {
			t.Errorf("%s: judged saturated: %+v", name, v)
		}
	}
	if v := JudgeSaturation(base[:29], SaturationRule{}); v.Saturated {
		t.Errorf("judged before the minimum time: %+v", v)
	}
	if v := JudgeSaturation(base[:10], SaturationRule{MinTime: 5 * time.Second}); !v.Saturated {
		t.Errorf("a shorter minimum time not honoured: %+v", v)
	}
}

func TestSaturationWatchBuckets(t *testing.T) {
	w := &SaturationWatch{}
	series := queueSeries(40, 20, 10, 100*time.Millisecond)
	var v SaturationVerdict
	for _, s := range series {
		w.Finished(-1) // a request without a first token does not count
		w.Finished(s.TTFTP50)
		w.Finished(s.TTFTP50)
		v = w.Tick(s.At, s.Sent, s.Done)
	}
	if !v.Saturated || v.AtS != 40 {
		t.Fatalf("watch verdict %+v", v)
	}
	if got := JudgeSaturation(series, SaturationRule{}); got != v {
		t.Errorf("watch %+v, series %+v", v, got)
	}
	empty := &SaturationWatch{}
	for i := 1; i <= 40; i++ {
		if v := empty.Tick(time.Duration(i)*time.Second, 0, 0); v.Saturated {
			t.Fatalf("idle run judged saturated: %+v", v)
		}
	}
}
