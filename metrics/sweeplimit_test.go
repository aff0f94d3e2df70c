package metrics

import (
	"strings"
	"testing"
)

// A sweep point limited by the harness is marked so: the client's own verdict, or a sending
// window too short for completions to show saturation (where "completed while sending" would
// otherwise call a healthy server saturated).
func TestPointLimited(t *testing.T) {
	ts := &TimeSeries{BucketS: 1, Sent: []int{30, 30, 30, 0, 0}, Completed: []int{0, 10, 20, 30, 30}, Failed: make([]int, 5),
		TTFTP50: []float64{20, 20, 21, 0, 0}}
	s := &Summary{TimeSeries: ts}
	s.Latency.E2E.P50, s.Latency.TTFT.P50 = 2100, 100
	p := PointFrom(20, true, s)
	if p.Saturated || !strings.HasPrefix(p.Limited, "window-limited") {
		t.Errorf("3 s window, 2 s decode: saturated %v (%s), limited %q", p.Saturated, p.Reason, p.Limited)
	}
	s.Latency.E2E.P50 = 300 // a 0.2 s decode: the 3 s window tells, and 30 of 90 done is saturation
	if p := PointFrom(20, true, s); !p.Saturated || p.Limited != "" {
		t.Errorf("short requests: saturated %v limited %q", p.Saturated, p.Limited)
	}
	s.Client = Client{Limited: true, Reason: "client-limited: schedule lag P99 20 ms exceeds 5 ms"}
	if p := PointFrom(20, true, s); p.Limited != "client-limited: schedule lag P99 20 ms exceeds 5 ms" {
		t.Errorf("client-limited point: %q", p.Limited)
	}
}
