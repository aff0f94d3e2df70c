package runner

import (
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// A limited point is never the capacity: the search treats it as failing and bisects below
// it, and the reason names it.
func TestLimitedPointIsNeverCapacity(t *testing.T) {
	pts := []metrics.SweepPoint{
		{Rate: 10, GoodputFraction: 1},
		{Rate: 20, GoodputFraction: 1, Limited: "client-limited: lag"},
	}
	search := CapacitySearch{Target: 0.9}
	next, c := search.Next(10, usablePoints(pts))
	if c.Rate != 10 || c.Failing != 20 || next != 15 {
		t.Fatalf("capacity %+v, next %v; want 10, failing 20, next 15", c, next)
	}
	res := &SweepResult{Points: pts, Capacity: c}
	why := capacityReason(res, 0.9)
	if !strings.Contains(why, "the next, 20, did not (limited by the harness)") || !strings.Contains(why, "client-limited: lag") {
		t.Errorf("reason %q", why)
	}
	if pts[1].Saturated {
		t.Error("usablePoints changed the caller's points")
	}
}
