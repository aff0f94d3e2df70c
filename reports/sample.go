package reports

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

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

// SampleRecords picks a few requests for the token-timeline view, deterministically: the
// median and the slowest end-to-end steady-state successes (every success when the run had no
// steady phase), the request with the largest gap between chunks, the slowest time to first
// token, and the first request that failed after streaming some tokens. Ties go to the smaller
// id; the median is the middle of the successes ordered by (E2E, id). each is called two or
// three times (a first pass keeps the picks so far and 16 bytes per success, a second, only
// when several requests share the median E2E, their ids, the last copies the chosen records),
// so it must yield the same records in the same order every time — metrics.Source's Each
// does. The picks come back in that order without duplicates, together with the reason for
// each pick.
func SampleRecords(each func(fn func(*metrics.Record) error) error) ([]metrics.Record, []string, error) {
	// Two candidate sets are tracked at once: steady-state successes, and all successes (used
	// when there is no steady one).
	var steady, all sampleSet
	var e2e []idxE2E // every success, for the median
	var failed samplePick
	idx := 0
	err := each(func(r *metrics.Record) error {
		i := idx
		idx++
		if !r.OK() || r.End == 0 || r.FirstToken == 0 {
			if !failed.ok && !r.OK() && len(r.Chunks) > 0 {
				failed = samplePick{ok: true, idx: i, id: r.ID}
			}
			return nil
		}
		k := sampleKey{idx: i, e2e: r.End - r.Intended, ttft: r.FirstToken - r.Intended,
			gap: int64(TimesOf(r).MaxGap * 1e6), streamed: len(r.Chunks) > 1}
		isSteady := r.Phase == metrics.PhaseSteady
		e2e = append(e2e, idxE2E{e2e: k.e2e, idx: int32(i), steady: isSteady})
		all.add(r.ID, k)
		if isSteady {
			steady.add(r.ID, k)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sample records (first pass): %w", err)
	}
	cand := &steady
	if !steady.slowest.ok {
		cand = &all
	} else {
		e2e = slices.DeleteFunc(e2e, func(c idxE2E) bool { return !c.steady })
	}
	median, err := medianOf(e2e, each)
	if err != nil {
		return nil, nil, err
	}
	var picks []samplePick
	var why []string
	add := func(p samplePick, reason string) {
		if !p.ok {
			return
		}
		for _, q := range picks {
			if q.idx == p.idx {
				return
			}
		}
		picks = append(picks, p)
		why = append(why, reason)
	}
	add(median, SampleMedian)
	add(cand.slowest, SampleSlowest)
	add(cand.stalled, SampleStalled)
	add(cand.ttft, SampleTTFT)
	add(failed, SampleFailed)
	if len(picks) == 0 {
		return nil, nil, nil
	}
	out, err := fetchPicks(each, picks)
	if err != nil {
		return nil, nil, err
	}
	return out, why, nil
}

// fetchPicks copies the picked records out of a last pass over each, checking that each
// pick's record is the one the first pass saw.
func fetchPicks(each func(fn func(*metrics.Record) error) error, picks []samplePick) ([]metrics.Record, error) {
	want := make(map[int]int, len(picks)) // record index -> position in picks
	for pos, p := range picks {
		want[p.idx] = pos
	}
	out := make([]metrics.Record, len(picks))
	idx := 0
	err := each(func(r *metrics.Record) error {
		if pos, ok := want[idx]; ok {
			if p := picks[pos]; p.id != "" && r.ID != p.id {
				return fmt.Errorf("record %d changed between passes (id %q, then %q): the source must yield the same records each time",
					idx+1, picks[pos].id, r.ID)
			}
			out[pos] = *r
			out[pos].Chunks = append([]metrics.Chunk(nil), r.Chunks...)
		}
		idx++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sample records (last pass): %w", err)
	}
	return out, nil
}

// sampleKey is what the first pass looks at in a successful record.
type sampleKey struct {
	idx       int
	e2e, ttft int64
	gap       int64
	streamed  bool // at least two chunks
}

// samplePick is a chosen record: its index in the pass and its id.
type samplePick struct {
	ok  bool
	idx int
	id  string
	val int64
}

// better reports whether (v, id) beats p: a larger value, ties to the smaller id.
func (p *samplePick) better(v int64, id string) bool {
	return !p.ok || v > p.val || v == p.val && id < p.id
}

// sampleSet follows the picks of one candidate set as records go by.
type sampleSet struct {
	slowest, stalled, ttft samplePick
}

// idxE2E is a candidate for the median: 16 bytes per successful request.
type idxE2E struct {
	e2e    int64
	idx    int32
	steady bool
}

func (s *sampleSet) add(id string, k sampleKey) {
	if s.slowest.better(k.e2e, id) {
		s.slowest = samplePick{true, k.idx, id, k.e2e}
	}
	if k.streamed && s.stalled.better(k.gap, id) {
		s.stalled = samplePick{true, k.idx, id, k.gap}
	}
	if s.ttft.better(k.ttft, id) {
		s.ttft = samplePick{true, k.idx, id, k.ttft}
	}
}

// medianOf returns the middle of the candidates ordered by (E2E, id). When several candidates
// share the median E2E it reads their ids in one more pass.
func medianOf(cands []idxE2E, each func(fn func(*metrics.Record) error) error) (samplePick, error) {
	n := len(cands)
	if n == 0 {
		return samplePick{}, nil
	}
	slices.SortFunc(cands, func(a, b idxE2E) int { return cmp.Compare(a.e2e, b.e2e) })
	mid := (n - 1) / 2
	v := cands[mid].e2e
	lo, _ := slices.BinarySearchFunc(cands, v, func(a idxE2E, v int64) int { return cmp.Compare(a.e2e, v) })
	hi := lo
	for hi < n && cands[hi].e2e == v {
		hi++
	}
	if hi-lo == 1 {
		c := cands[lo]
		return samplePick{ok: true, idx: int(c.idx), val: v}, nil // the id is checked by the last pass
	}
	ties := make(map[int]string, hi-lo) // record index -> id
	for _, c := range cands[lo:hi] {
		ties[int(c.idx)] = ""
	}
	idx := 0
	err := each(func(r *metrics.Record) error {
		if _, ok := ties[idx]; ok {
			ties[idx] = r.ID
		}
		idx++
		return nil
	})
	if err != nil {
		return samplePick{}, fmt.Errorf("sample records (median pass): %w", err)
	}
	tied := make([]samplePick, 0, len(ties))
	for i, id := range ties {
		tied = append(tied, samplePick{true, i, id, v})
	}
	slices.SortFunc(tied, func(a, b samplePick) int { return cmp.Or(strings.Compare(a.id, b.id), cmp.Compare(a.idx, b.idx)) })
	return tied[mid-lo], nil
}
