package runner

import (
	"math"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

func TestCapacitySearchBracketsAndBisects(t *testing.T) {
	const capacity = 7.3
	// A model endpoint: every request meets the SLO up to the capacity, then goodput falls off;
	// past 9 req/s it saturates.
	measure := func(rate float64) metrics.SweepPoint {
		s := &metrics.Summary{Requests: metrics.Requests{Total: 100}}
		s.Throughput.RequestsPerS = math.Min(rate, 9)
		s.TimeSeries = steadySeries(60, rate*10, math.Min(rate, 9)*10, 20)
		s.Goodput.Fraction = 1
		if rate > capacity {
			s.Goodput.Fraction = math.Max(0, 1-(rate-capacity))
		}
		return metrics.PointFrom(rate, true, s)
	}
	search := CapacitySearch{Target: 0.9}
	var pts []metrics.SweepPoint
	next, c := search.Next(1, nil)
	for !c.Done {
		pts = append(pts, measure(next))
		next, c = search.Next(1, pts)
	}
	if c.Rate > capacity+0.1 || c.Rate < capacity*0.95 || c.Failing <= c.Rate {
		t.Fatalf("capacity %+v after %d points", c, len(pts))
	}
	if len(pts) > 12 {
		t.Fatalf("%d points", len(pts))
	}
	if !measure(12).Saturated || measure(5).Saturated { // 9 of 12 req/s completed while sending
		t.Error("saturation rule")
	}
}

func TestCapacitySearchNothingPasses(t *testing.T) {
	search := CapacitySearch{Target: 0.9, MinRate: 0.25}
	fail := metrics.SweepPoint{GoodputFraction: 0.1}
	var pts []metrics.SweepPoint
	next, c := search.Next(2, nil)
	for !c.Done {
		p := fail
		p.Rate = next
		pts = append(pts, p)
		next, c = search.Next(2, pts)
	}
	if c.Rate != 0 || pts[len(pts)-1].Rate != 0.25 {
		t.Fatalf("%+v %+v", c, pts)
	}
}

// steadySeries is n one-second buckets sending and completing the given counts per bucket
// with a constant TTFT median.
func steadySeries(n int, sent, completed, ttft float64) *metrics.TimeSeries {
	ts := &metrics.TimeSeries{BucketS: 1}
	for i := 0; i < n; i++ {
		ts.Sent = append(ts.Sent, int(sent))
		ts.Completed = append(ts.Completed, int(completed))
		ts.Failed = append(ts.Failed, 0)
		ts.TTFTP50 = append(ts.TTFTP50, ttft)
	}
	return ts
}
