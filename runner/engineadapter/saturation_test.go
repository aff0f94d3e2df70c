package engineadapter

import (
	"sort"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/traces"
)

// saturationSeries is the per-second series the online detector would see from a simulated
// client of the engine on its virtual clock: a request is sent at its arrival, finishes at
// its last token, and its TTFT is its first emission less its arrival.
func saturationSeries(t *testing.T, reqs []traces.Request) []metrics.SaturationSample {
	t.Helper()
	res, err := refengine.Simulate(SimRequests(reqs, 1), overloadEngine)
	if err != nil {
		t.Fatal(err)
	}
	end := reqs[len(reqs)-1].Arrival
	buckets := int(end/time.Second) + 1
	sent := make([]int64, buckets+1)
	done := make([]int64, buckets+1)
	ttfts := make([][]float64, buckets+1)
	bucket := func(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }
	for i := range res.Timelines {
		tl := &res.Timelines[i]
		if b := bucket(tl.Arrival); b <= buckets {
			sent[b]++
		}
		if !tl.Done || tl.Finish < 0 {
			continue
		}
		if b := bucket(tl.Finish); b <= buckets {
			done[b]++
			if len(tl.Emissions) > 0 {
				ttfts[b] = append(ttfts[b], float64(tl.Emissions[0].At-tl.Arrival)/float64(time.Millisecond))
			}
		}
	}
	var out []metrics.SaturationSample
	var cs, cd int64
	for b := 0; b <= buckets; b++ {
		cs += sent[b]
		cd += done[b]
		s := metrics.SaturationSample{At: time.Duration(b) * time.Second, Sent: cs, Done: cd, TTFTP50: -1}
		if v := ttfts[b]; len(v) > 0 {
			sort.Float64s(v)
			s.TTFTP50 = time.Duration(v[len(v)/2] * float64(time.Millisecond))
		}
		out = append(out, s)
	}
	return out
}

// stopTime is when a detector judging the series each second would first stop the run
// (-1: never).
func stopTime(series []metrics.SaturationSample) time.Duration {
	for i := range series {
		if metrics.JudgeSaturation(series[:i+1], metrics.SaturationRule{}).Saturated {
			return series[i].At
		}
	}
	return -1
}

// TestSaturationDetectorOnTheEngine: over seeded Poisson traces on the engine's virtual clock
// (30 of 150 s at 80% of the engine's capacity, 10 of 90 s at twice it, 10 of 60 s at ten
// times it), the online detector never stops a run at 80%, and always stops one at twice and
// ten times the capacity, after its minimum time. The times to stop are
// logged for docs/capacity.md (go test -v -run TestSaturationDetectorOnTheEngine).
func TestSaturationDetectorOnTheEngine(t *testing.T) {
	capacity := servedRate(t, 2000)
	t.Logf("engine capacity %.2f req/s (MaxNumSeqs 4)", capacity)
	for _, c := range []struct {
		load           float64
		seconds, seeds int
	}{{0.8, 150, 30}, {2, 90, 10}, {10, 60, 10}} {
		load, seconds, seeds := c.load, float64(c.seconds), c.seeds
		var stops []float64
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			rate := load * capacity
			reqs := poissonTrace(seed, int(rate*seconds), rate)
			at := stopTime(saturationSeries(t, reqs))
			switch {
			case load < 1 && at >= 0:
				t.Errorf("%.1f× capacity, seed %d: false stop at %v", load, seed, at)
			case load > 1 && at < 0:
				t.Errorf("%.1f× capacity, seed %d: never stopped", load, seed)
			case load > 1 && at < metrics.DefaultSaturationMinTime:
				t.Errorf("%.1f× capacity, seed %d: stopped at %v, before the minimum time", load, seed, at)
			case at >= 0:
				stops = append(stops, at.Seconds())
			}
		}
		sort.Float64s(stops)
		if len(stops) > 0 {
			t.Logf("%.1f× capacity: %d/%d seeds stopped; time to stop min %.0f s, median %.0f s, max %.0f s", load, len(stops), seeds, stops[0], stops[len(stops)/2], stops[len(stops)-1])
		} else {
			t.Logf("%.1f× capacity: 0/%d seeds stopped", load, seeds)
		}
	}
}
