package reports

import (
	"fmt"
	"sort"

	"github.com/llmbench/llmbench/metrics"
)

// Sample is why a request was picked for the token-timeline view.
const (
	SampleMedian  = "median E2E"
	SampleSlowest = "slowest E2E"
	SampleStalled = "largest chunk gap"
	SampleTTFT    = "slowest TTFT"
	SampleFailed  = "failed mid-stream"
)

// sampleKey is what the first pass keeps of each record (a few words, not the record).
type sampleKey struct {
	id           string
	e2e, ttft    int64
	gap          int64
	ok, steady   bool
	streamed     bool // at least two chunks
	failedStream bool
}

// SampleRecords picks a few requests for the token-timeline view, deterministically: the
// median and the slowest end-to-end steady-state successes, the request with the largest gap
// between chunks, the slowest time to first token, and the first request that failed after
// streaming some tokens. Ties go to the smaller id. Each is called twice (a first pass keeps a
// few numbers per request, the second copies the chosen records), so it must yield the same
// records in the same order both times — metrics.Source's Each does. The picks come back in
// that order without duplicates, together with the reason for each pick.
func SampleRecords(each func(fn func(*metrics.Record) error) error) ([]metrics.Record, []string, error) {
	var keys []sampleKey
	err := each(func(r *metrics.Record) error {
		t := TimesOf(r)
		keys = append(keys, sampleKey{
			id: r.ID, e2e: r.End - r.Intended, ttft: r.FirstToken - r.Intended, gap: int64(t.MaxGap * 1e6),
			ok: r.OK() && r.End != 0 && r.FirstToken != 0, steady: r.Phase == metrics.PhaseSteady,
			streamed: len(r.Chunks) > 1, failedStream: !r.OK() && len(r.Chunks) > 0,
		})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sample records (first pass): %w", err)
	}
	// Candidates: steady-state successes, or every success when the run had no steady phase.
	var cand []int
	for i, k := range keys {
		if k.ok && k.steady {
			cand = append(cand, i)
		}
	}
	if len(cand) == 0 {
		for i, k := range keys {
			if k.ok {
				cand = append(cand, i)
			}
		}
	}
	var picks []int
	var why []string
	add := func(i int, reason string) {
		if i < 0 {
			return
		}
		for _, p := range picks {
			if p == i {
				return
			}
		}
		picks = append(picks, i)
		why = append(why, reason)
	}
	byE2E := append([]int(nil), cand...)
	sort.SliceStable(byE2E, func(a, b int) bool {
		ka, kb := keys[byE2E[a]], keys[byE2E[b]]
		if ka.e2e != kb.e2e {
			return ka.e2e < kb.e2e
		}
		return ka.id < kb.id
	})
	if len(byE2E) > 0 {
		add(byE2E[(len(byE2E)-1)/2], SampleMedian)
		add(byE2E[len(byE2E)-1], SampleSlowest)
	}
	add(argBest(keys, cand, func(k sampleKey) (int64, bool) { return k.gap, k.streamed }), SampleStalled)
	add(argBest(keys, cand, func(k sampleKey) (int64, bool) { return k.ttft, true }), SampleTTFT)
	for i, k := range keys {
		if k.failedStream {
			add(i, SampleFailed)
			break
		}
	}
	if len(picks) == 0 {
		return nil, nil, nil
	}
	want := make(map[int]int, len(picks)) // record index -> position in picks
	for pos, i := range picks {
		want[i] = pos
	}
	out := make([]metrics.Record, len(picks))
	idx := 0
	err = each(func(r *metrics.Record) error {
		if pos, ok := want[idx]; ok {
			if r.ID != keys[idx].id {
				return fmt.Errorf("record %d changed between passes (id %q, then %q): the source must yield the same records each time",
					idx+1, keys[idx].id, r.ID)
			}
			out[pos] = *r
			out[pos].Chunks = append([]metrics.Chunk(nil), r.Chunks...)
		}
		idx++
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sample records (second pass): %w", err)
	}
	return out, why, nil
}

// argBest returns the candidate with the largest value (ties: smaller id), or -1.
func argBest(keys []sampleKey, cand []int, val func(sampleKey) (int64, bool)) int {
	best := -1
	var bestV int64
	for _, i := range cand {
		v, ok := val(keys[i])
		if !ok {
			continue
		}
		if best < 0 || v > bestV || (v == bestV && keys[i].id < keys[best].id) {
			best, bestV = i, v
		}
	}
	return best
}
