package reports

import (
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

func TestSampleRecordsPicksDeterministically(t *testing.T) {
	recs := fixtureRecords(400)
	got, why, err := SampleRecords(EachOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(why) || len(got) < 4 {
		t.Fatalf("got %d picks with %d reasons", len(got), len(why))
	}
	// Recompute the expectations by brute force over the steady successes.
	var slowest, gapID string
	var slowE2E, bigGap int64 = -1, -1
	for i := range recs {
		r := &recs[i]
		if !r.OK() || r.Phase != metrics.PhaseSteady {
			continue
		}
		if e := r.End - r.Intended; e > slowE2E || (e == slowE2E && r.ID < slowest) {
			slowE2E, slowest = e, r.ID
		}
		if g := int64(TimesOf(r).MaxGap * 1e6); g > bigGap || (g == bigGap && r.ID < gapID) {
			bigGap, gapID = g, r.ID
		}
	}
	reasons := map[string]string{}
	for i, r := range got {
		reasons[why[i]] = r.ID
		if r.Phase != metrics.PhaseSteady && why[i] != SampleFailed {
			t.Errorf("%s pick %s is from phase %q", why[i], r.ID, r.Phase)
		}
	}
	if reasons[SampleSlowest] != slowest {
		t.Errorf("slowest = %s, want %s", reasons[SampleSlowest], slowest)
	}
	if id, ok := reasons[SampleStalled]; ok && id != gapID {
		t.Errorf("stalled = %s, want %s", id, gapID)
	}
	if _, ok := reasons[SampleFailed]; !ok {
		t.Errorf("no failed-mid-stream pick; reasons %v", reasons)
	}
	again, _, err := SampleRecords(EachOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if again[i].ID != got[i].ID {
			t.Fatalf("second sampling differs at %d: %s vs %s", i, again[i].ID, got[i].ID)
		}
	}
	// The copies must not alias the source's chunk arrays (metrics.EachRecord reuses them).
	got[0].Chunks[0].Tokens = 99
	for i := range recs {
		if recs[i].ID == got[0].ID && recs[i].Chunks[0].Tokens == 99 {
			t.Fatal("sample aliases the source record's chunks")
		}
	}
}

func TestSampleRecordsEmpty(t *testing.T) {
	got, why, err := SampleRecords(EachOf(nil))
	if err != nil || got != nil || why != nil {
		t.Fatalf("got %v %v %v", got, why, err)
	}
}
