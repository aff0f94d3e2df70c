package metrics

import (
	"math"
	"time"
)

// Time series, per bucket from the run epoch, over every phase (warm-up and cool-down are
// marked by TimeSeries.WarmupEndS / CooldownStartS, 0 when the phase is absent):
//
//	in_flight      time-weighted mean number of requests between Sent and End, rounded
//	queued         the same between Dispatched and Sent (waiting for a concurrency slot)
//	sent           requests sent in the bucket
//	completed      successful requests that ended in the bucket
//	failed         failed requests that ended in the bucket (never-sent ones at their
//	               intended time)
//	output tok/s   tokens of every chunk that arrived in the bucket, per second
//	ttft p50/p99   successful requests whose first token arrived in the bucket (NaN, null in
//	               JSON, for a bucket with none)
//	itl p50/p99    per-token ITL samples of successful requests, at their chunk's arrival
//	               (NaN / null for a bucket with none)
//
// Window percentiles come from a compact log-linear histogram (128 sub-buckets per power of
// two: under 0.8% relative error), kept sparse so memory follows the number of distinct
// values per bucket, not the number of records.

// tsBuilder accumulates the time series.
type tsBuilder struct {
	width    int64 // ns per bucket
	n        int
	inFlight []float64
	queued   []float64
	sent     []int
	done     []int
	failed   []int
	tokens   []int64
	ttft     []sparseHist
	itl      []sparseHist
	// graded and passed count quality grades by end time (nil until a record is graded).
	graded, passed []int
}

func newTSBuilder(bucket time.Duration, maxT int64) *tsBuilder {
	w := int64(bucket)
	n := int(maxT/w) + 1
	if n > MaxBuckets {
		mult := (int64(n) + MaxBuckets - 1) / MaxBuckets
		w *= mult
		n = int(maxT/w) + 1
	}
	return &tsBuilder{
		width: w, n: n,
		inFlight: make([]float64, n), queued: make([]float64, n),
		sent: make([]int, n), done: make([]int, n), failed: make([]int, n),
		tokens: make([]int64, n), ttft: make([]sparseHist, n), itl: make([]sparseHist, n),
	}
}

func (b *tsBuilder) idx(t int64) int {
	if t < 0 {
		return 0
	}
	i := int(t / b.width)
	if i >= b.n {
		i = b.n - 1
	}
	return i
}

// spread adds the fraction of [from, to) that falls in each bucket to acc.
func (b *tsBuilder) spread(acc []float64, from, to int64) {
	if to <= from || from < 0 {
		return
	}
	for i := b.idx(from); i < b.n; i++ {
		lo, hi := int64(i)*b.width, int64(i+1)*b.width
		if lo >= to {
			break
		}
		ov := min(hi, to) - max(lo, from)
		if ov > 0 {
			acc[i] += float64(ov) / float64(b.width)
		}
	}
}

func (b *tsBuilder) add(r *Record) {
	if r.Sent > 0 {
		b.sent[b.idx(r.Sent)]++
		if r.End > 0 {
			b.spread(b.inFlight, r.Sent, r.End)
		}
		if r.Dispatched > 0 {
			b.spread(b.queued, r.Dispatched, r.Sent)
		}
	} else if r.Dispatched > 0 && r.End > 0 {
		b.spread(b.queued, r.Dispatched, r.End)
	}
	end := r.End
	if end <= 0 {
		end = r.Intended
	}
	if r.OK() {
		b.done[b.idx(end)]++
	} else if !r.Cancelled() {
		b.failed[b.idx(end)]++
	}
	if r.Grade != "" {
		if b.graded == nil {
			b.graded, b.passed = make([]int, b.n), make([]int, b.n)
		}
		b.graded[b.idx(end)]++
		if r.Grade == GradePass {
			b.passed[b.idx(end)]++
		}
	}
	for _, c := range r.Chunks {
		b.tokens[b.idx(c.T)] += chunkTokens(c)
	}
	if !r.OK() {
		return
	}
	if r.FirstToken > 0 {
		i := b.idx(r.FirstToken)
		b.ttft[i] = b.ttft[i].add(nsToMicros(r.FirstToken-r.Intended), 1)
	}
	for i, c := range r.Chunks {
		j := b.idx(c.T)
		k := chunkTokens(c)
		if i > 0 {
			b.itl[j] = b.itl[j].add(nsToMicros(c.T-r.Chunks[i-1].T), 1)
		}
		if k > 1 {
			b.itl[j] = b.itl[j].add(0, k-1)
		}
	}
}

func (b *tsBuilder) build() *TimeSeries {
	ts := &TimeSeries{
		BucketS:  seconds(b.width),
		T:        make([]float64, b.n),
		InFlight: make([]int, b.n), Queued: make([]int, b.n),
		Sent: b.sent, Completed: b.done, Failed: b.failed,
		OutputTokPerS: make([]float64, b.n),
		TTFTP50:       make(Series, b.n), TTFTP99: make(Series, b.n),
		ITLP50: make(Series, b.n), ITLP99: make(Series, b.n),
		Graded: b.graded, Passed: b.passed, PassRate: passRates(b.graded, b.passed),
	}
	for i := 0; i < b.n; i++ {
		ts.T[i] = seconds(int64(i) * b.width)
		ts.InFlight[i] = int(math.Round(b.inFlight[i]))
		ts.Queued[i] = int(math.Round(b.queued[i]))
		ts.OutputTokPerS[i] = float64(b.tokens[i]) / seconds(b.width)
		ts.TTFTP50[i], ts.TTFTP99[i] = b.ttft[i].quantiles(0.5, 0.99)
		ts.ITLP50[i], ts.ITLP99[i] = b.itl[i].quantiles(0.5, 0.99)
	}
	return ts
}
