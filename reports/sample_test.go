package reports

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

func TestSampleRecordsPicksDeterministically(t *testing.T) {
	recs := fixtureRecords(400)
	got, why, err := SampleRecords(eachOf(recs))
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
	again, _, err := SampleRecords(eachOf(recs))
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
	got, why, err := SampleRecords(eachOf(nil))
	if err != nil || got != nil || why != nil {
		t.Fatalf("got %v %v %v", got, why, err)
	}
}

// bruteSample is SampleRecords' documented choice computed the obvious way, holding every
// record.
func bruteSample(recs []metrics.Record) (ids, why []string) {
	type c struct {
		i             int
		e2e, ttft, gp int64
	}
	var steady, all []c
	failed := -1
	for i := range recs {
		r := &recs[i]
		if !r.OK() || r.End == 0 || r.FirstToken == 0 {
			if failed < 0 && !r.OK() && len(r.Chunks) > 0 {
				failed = i
			}
			continue
		}
		k := c{i, r.End - r.Intended, r.FirstToken - r.Intended, int64(TimesOf(r).MaxGap * 1e6)}
		all = append(all, k)
		if r.Phase == metrics.PhaseSteady {
			steady = append(steady, k)
		}
	}
	cand := steady
	if len(cand) == 0 {
		cand = all
	}
	add := func(i int, reason string) {
		if i < 0 || slices.Contains(ids, recs[i].ID) {
			return
		}
		ids, why = append(ids, recs[i].ID), append(why, reason)
	}
	if len(cand) > 0 {
		sorted := slices.Clone(cand)
		sort.SliceStable(sorted, func(a, b int) bool {
			if sorted[a].e2e != sorted[b].e2e {
				return sorted[a].e2e < sorted[b].e2e
			}
			return recs[sorted[a].i].ID < recs[sorted[b].i].ID
		})
		add(sorted[(len(sorted)-1)/2].i, SampleMedian)
	}
	best := func(val func(c) (int64, bool)) int {
		b := -1
		var bv int64
		for _, k := range cand {
			v, ok := val(k)
			if ok && (b < 0 || v > bv || v == bv && recs[k.i].ID < recs[b].ID) {
				b, bv = k.i, v
			}
		}
		return b
	}
	add(best(func(k c) (int64, bool) { return k.e2e, true }), SampleSlowest)
	add(best(func(k c) (int64, bool) { return k.gp, len(recs[k.i].Chunks) > 1 }), SampleStalled)
	add(best(func(k c) (int64, bool) { return k.ttft, true }), SampleTTFT)
	add(failed, SampleFailed)
	return ids, why
}

// TestSampleRecordsMatchesBruteForce checks the streaming sampler against bruteSample on
// runs full of ties (equal E2E, TTFT and gaps), with and without a steady phase.
func TestSampleRecordsMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := 1 + rng.IntN(40)
		recs := make([]metrics.Record, n)
		perm := rng.Perm(n)
		for i := range recs {
			r := &recs[i]
			r.ID = fmt.Sprintf("q%02d", perm[i]) // ids out of record order
			r.Intended = int64(rng.IntN(3)) * 1e6
			r.FirstToken = r.Intended + int64(1+rng.IntN(3))*1e6
			r.End = r.FirstToken + int64(rng.IntN(3))*1e6
			r.Status = 200
			for k := range rng.IntN(4) {
				r.Chunks = append(r.Chunks, metrics.Chunk{T: r.FirstToken + int64(k*rng.IntN(3))*1e6, Tokens: 1})
			}
			switch rng.IntN(6) {
			case 0:
				r.Failure, r.Status = metrics.FailStreamBroken, 0
			case 1:
				r.Phase = metrics.PhaseWarmup
			}
			if trial%3 == 0 {
				r.Phase = metrics.PhaseWarmup // no steady phase at all
			}
		}
		got, why, err := SampleRecords(eachOf(recs))
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []string
		for _, r := range got {
			gotIDs = append(gotIDs, r.ID)
		}
		wantIDs, wantWhy := bruteSample(recs)
		if !slices.Equal(gotIDs, wantIDs) || !slices.Equal(why, wantWhy) {
			t.Fatalf("trial %d: picks %v %v, want %v %v", trial, gotIDs, why, wantIDs, wantWhy)
		}
	}
}
