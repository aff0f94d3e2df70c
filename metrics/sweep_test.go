package metrics

import "testing"

// steadySeries is n one-second buckets sending and completing the given counts per bucket
// with a constant TTFT median.
func steadySeries(n int, sent, completed, ttft float64) *TimeSeries {
	ts := &TimeSeries{BucketS: 1}
	for i := 0; i < n; i++ {
		ts.Sent = append(ts.Sent, int(sent))
		ts.Completed = append(ts.Completed, int(completed))
		ts.Failed = append(ts.Failed, 0)
		ts.TTFTP50 = append(ts.TTFTP50, ttft)
	}
	return ts
}

func TestSaturationFromGrowingTTFT(t *testing.T) {
	s := &Summary{Requests: Requests{Total: 600}}
	s.TimeSeries = steadySeries(60, 10, 10, 20)
	if p := PointFrom(10, true, s); p.Saturated {
		t.Fatalf("steady run flagged: %s", p.Reason)
	}
	for i := range s.TimeSeries.TTFTP50 {
		s.TimeSeries.TTFTP50[i] = 20 + 40*float64(i) // a queue that builds for a minute
	}
	p := PointFrom(10, true, s)
	if !p.Saturated || p.Reason == "" {
		t.Fatalf("growing TTFT not flagged: %+v", p)
	}
	if q := PointFrom(10, false, s); q.Saturated {
		t.Fatal("closed loop judged by arrival-rate rules")
	}
}
