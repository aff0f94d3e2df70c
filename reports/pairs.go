package reports

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	"github.com/llmbench/llmbench/metrics"
)

// RequestPairs are per-request latencies of the same requests on two sides of a comparison,
// for the A vs B scatter.
type RequestPairs struct {
	// Matched is how many requests succeeded on both sides; the slices hold at most the
	// sample PairRecords kept.
	Matched int
	// Keys identify each pair ("id" or "id#repeat").
	Keys               []string
	BaseTTFT, CandTTFT []float64
	BaseE2E, CandE2E   []float64
}

type pairTimes struct{ ttft, e2e float64 }

// PairRecords matches steady-state successful requests of base and cand by id (and repeat
// index) and returns their TTFT and E2E in ms. When more than maxPoints pairs match (0 means
// 1000), a deterministic sample is kept: the pairs whose key hashes lowest, so the same inputs
// always give the same points whatever the record order. Only the first record of a key on
// each side counts.
func PairRecords(base, cand func(fn func(*metrics.Record) error) error, maxPoints int) (*RequestPairs, error) {
	if maxPoints <= 0 {
		maxPoints = 1000
	}
	side := func(each func(fn func(*metrics.Record) error) error, name string) (map[string]pairTimes, error) {
		m := map[string]pairTimes{}
		err := each(func(r *metrics.Record) error {
			if !r.OK() || r.Phase != metrics.PhaseSteady || r.FirstToken == 0 || r.End == 0 {
				return nil
			}
			k := pairKey(r)
			if _, dup := m[k]; !dup {
				m[k] = pairTimes{float64(r.FirstToken-r.Intended) / 1e6, float64(r.End-r.Intended) / 1e6}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("pair requests (%s side): %w", name, err)
		}
		return m, nil
	}
	b, err := side(base, "base")
	if err != nil {
		return nil, err
	}
	c, err := side(cand, "candidate")
	if err != nil {
		return nil, err
	}
	type hk struct {
		h uint64
		k string
	}
	var keys []hk
	for k := range b {
		if _, ok := c[k]; ok {
			h := fnv.New64a()
			h.Write([]byte(k))
			keys = append(keys, hk{h.Sum64(), k})
		}
	}
	p := &RequestPairs{Matched: len(keys)}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].h != keys[j].h {
			return keys[i].h < keys[j].h
		}
		return keys[i].k < keys[j].k
	})
	if len(keys) > maxPoints {
		keys = keys[:maxPoints]
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].k < keys[j].k })
	for _, k := range keys {
		p.Keys = append(p.Keys, k.k)
		p.BaseTTFT = append(p.BaseTTFT, b[k.k].ttft)
		p.CandTTFT = append(p.CandTTFT, c[k.k].ttft)
		p.BaseE2E = append(p.BaseE2E, b[k.k].e2e)
		p.CandE2E = append(p.CandE2E, c[k.k].e2e)
	}
	return p, nil
}

func pairKey(r *metrics.Record) string {
	if r.Repeat == 0 {
		return r.ID
	}
	return r.ID + "#" + strconv.Itoa(r.Repeat)
}
