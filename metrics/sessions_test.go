package metrics

import (
	"math"
	"testing"
)

// TestSessionsCriticalPath: a fan-out to two sub-agents and a join. The wall time splits
// exactly into model, tool and think time along the path through the sub-agent that ended
// last; a session with a failed turn counts as failed and stays out of the distributions.
func TestSessionsCriticalPath(t *testing.T) {
	turn := func(id string, n int, intended, end int64, after string, tool, think int64) Record {
		return Record{ID: id, Session: "s1", Turn: n, Intended: intended * msNs, Sent: intended * msNs,
			End: end * msNs, After: after, ToolDelay: tool * msNs, Think: think * msNs, TokenSource: TokensFromUsage}
	}
	recs := SliceSource{
		turn("plan", 1, 0, 50, "", 0, 0),
		turn("a", 2, 150, 200, "plan", 100, 0),
		turn("b", 3, 170, 220, "plan", 120, 0),
		turn("join", 4, 250, 300, "b", 0, 30),
	}
	failed := []Record{
		{ID: "x1", Session: "s2", Turn: 1, Intended: 0, End: 10 * msNs},
		{ID: "x2", Session: "s2", Turn: 2, Intended: 20 * msNs, End: 30 * msNs, After: "x1", Failure: FailHTTP5xx},
	}
	recs = append(recs, failed...)
	sum, err := Summarize(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := sum.Sessions
	if s == nil || s.Count != 2 || s.Completed != 1 || s.Failed != 1 || s.Turns != 6 || s.TurnsMax != 4 {
		t.Fatalf("sessions %+v", s)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= want*0.001+1e-9 }
	if !near(s.WallMs.Max, 300) || !near(s.ModelMs.Max, 150) || !near(s.ToolMs.Max, 120) || !near(s.ThinkMs.Max, 30) {
		t.Errorf("wall %v model %v tool %v think %v, want 300 = 150 + 120 + 30", s.WallMs.Max, s.ModelMs.Max, s.ToolMs.Max, s.ThinkMs.Max)
	}
	if !near(s.ModelFraction, 0.5) || !near(s.ToolFraction, 0.4) || !near(s.ThinkFraction, 0.1) {
		t.Errorf("fractions %v %v %v", s.ModelFraction, s.ToolFraction, s.ThinkFraction)
	}
	if v, _ := MetricValue(sum, "session_wall.p50"); !near(v, 300) {
		t.Errorf("session_wall.p50 from the summary: %v", v)
	}

	// A trace without sessions has no block.
	plain, err := Summarize(SliceSource{{ID: "r", End: msNs, TokenSource: TokensFromUsage}}, Options{})
	if err != nil || plain.Sessions != nil {
		t.Errorf("plain run: sessions %+v, %v", plain.Sessions, err)
	}
}
