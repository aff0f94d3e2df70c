package metrics

import "fmt"

// Shift moves every time of r by d nanoseconds: merge rebases each shard's records, which
// count from the shard's own epoch, onto the run's common epoch. Intended always moves; the
// other times move only when set (0 means "did not happen"). Durations between r's times,
// and so every latency, are unchanged.
func (r *Record) Shift(d int64) {
	if d == 0 {
		return
	}
	r.Intended += d
	for _, t := range []*int64{&r.Dispatched, &r.Sent, &r.Headers, &r.FirstToken, &r.End} {
		if *t != 0 {
			*t += d
		}
	}
	for i := range r.Chunks {
		r.Chunks[i].T += d
	}
}

// HistogramDiff lists the histograms that a and b both hold and encode differently, and
// those only one of them holds, as "name: why" lines (nil when they agree). Merge uses it to
// check that the shards' own summaries, merged (MergeSummaries), give exactly the histograms
// of the merged records.
func HistogramDiff(a, b *Summary) []string {
	var out []string
	for k, ea := range a.Histograms {
		eb, ok := b.Histograms[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: only in the first", k))
		case ea != eb:
			out = append(out, fmt.Sprintf("%s: counts differ", k))
		}
	}
	for k := range b.Histograms {
		if _, ok := a.Histograms[k]; !ok {
			out = append(out, fmt.Sprintf("%s: only in the second", k))
		}
	}
	return out
}
