package metrics

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// reqVals are the per-request values of one steady-state record.
type reqVals struct {
	unit int // index into sideData.units
	run  int
	pos  int32 // the record's place among its run's steady records (the second pass finds it so)
	at   int64 // intended send time (ns from the run's epoch): orders the time blocks
	ok   bool
	met  bool
	// cancelled: the client cancelled the request on purpose (KindCancelled).
	cancelled bool

	// Scalar families in ms (NaN: undefined for this request), indexed by scalarFam.
	sc [nScalarFam]float64

	// Binned families: ITL per token, per chunk (µs bins) and tokens per chunk: the count and
	// exact sum; their bins are merged by resampling cell straight from a second reading of the
	// records (cellsOf), never held per record.
	sums [nBinFam]float64 // sum of values (ms, or tokens)
	cnt  [nBinFam]int64

	stalls            int64
	stalledNs, decNs  int64
	inTok, outTok     int64
	fluidGE90, hasFlu bool
	// Quality (issue 17): the record was graded, and passed; grade is Record.Grade.
	graded, passed bool
	grade          string
	// Prefix cache (issue 34): the record reported cached prompt tokens (cacheRep), and
	// cachedTok of its cachePrompt prompt tokens were cached (prefixcache.go's cachedOf).
	cacheRep               bool
	cachedTok, cachePrompt int64
}

const (
	sfTTFT = iota
	sfTPOT
	sfE2E
	sfQueue
	sfMaxGap
	sfNorm
	sfFluid
	sfTTFAT
	sfSessionWall // agentic sessions: on each session's first turn (sessions.go)
	sfSessionModel
	nScalarFam
)

var scalarFamIdx = map[string]int{"ttft": sfTTFT, "tpot": sfTPOT, "e2e": sfE2E, "queue": sfQueue, "max_gap": sfMaxGap, "normalized": sfNorm, "fluidity": sfFluid, "ttfat": sfTTFAT,
	"session_wall": sfSessionWall, "session_model": sfSessionModel}

const (
	bfITL = iota
	bfChunk
	bfTPC
	bfBurst
	bfTPB
	nBinFam
)

var binFamIdx = map[string]int{"itl": bfITL, "itl_chunk": bfChunk, "tokens_per_chunk": bfTPC,
	"itl_burst": bfBurst, "tokens_per_burst": bfTPB}

// sideData holds one side's per-request values.
type sideData struct {
	recs    []reqVals
	units   []string // request id per unit
	unitIdx map[string]int
	// unitRecs lists the records of each unit.
	unitRecs [][]int32
	runs     int
	runWin   []float64 // steady window per run, seconds
	window   float64   // sum of runWin
	hashes   map[string]*hashSeen
	// srcs are the runs' records, read again by cellsOf for the bins; steady[r] counts run
	// r's steady-state records.
	srcs   []Source
	steady []int32
}

type hashSeen struct {
	first    string
	mismatch bool
	any      bool
}

func loadSide(srcs []Source, o *Options) (*sideData, error) {
	d := &sideData{unitIdx: map[string]int{}, hashes: map[string]*hashSeen{}, runs: len(srcs), srcs: srcs, steady: make([]int32, len(srcs))}
	dl := o.deadlines()
	sm := &summarizer{opts: *o}
	var scratch []int64
	for run, src := range srcs {
		var start, end int64
		has := false
		anon := 0
		var sess sessionTracker
		err := src.Each(func(r *Record) error {
			if r.Phase != PhaseSteady {
				return nil
			}
			e := r.End
			if e <= 0 {
				e = r.Intended
			}
			if !has || r.Intended < start {
				start = r.Intended
			}
			if !has || e > end {
				end = e
			}
			has = true
			key := r.ID
			if key == "" {
				anon++
				key = "\x00anon/" + strconv.Itoa(run) + "/" + strconv.Itoa(anon)
			}
			u, ok := d.unitIdx[key]
			if !ok {
				u = len(d.units)
				d.units = append(d.units, key)
				d.unitRecs = append(d.unitRecs, nil)
				d.unitIdx[key] = u
			}
			d.unitRecs[u] = append(d.unitRecs[u], int32(len(d.recs)))
			var v reqVals
			v.unit, v.run, v.at, v.pos = u, run, r.Intended, d.steady[run]
			d.steady[run]++
			scratch = fillReqVals(&v, r, dl, o, sm, scratch)
			sess.add(r, len(d.recs))
			d.recs = append(d.recs, v)
			if r.OK() && r.OutputHash != "" {
				hs := d.hashes[key]
				if hs == nil {
					hs = &hashSeen{}
					d.hashes[key] = hs
				}
				if !hs.any {
					hs.first, hs.any = r.OutputHash, true
				} else if hs.first != r.OutputHash {
					hs.mismatch = true
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, ErrTruncated) {
			return nil, fmt.Errorf("run %d: %w", run+1, err)
		}
		setSessionValues(&sess, d.recs)
		w := 0.0
		if has {
			w = seconds(end - start)
		}
		d.runWin = append(d.runWin, w)
		d.window += w
	}
	return d, nil
}

func fillReqVals(v *reqVals, r *Record, dl fluidityDeadlines, o *Options, sm *summarizer, scratch []int64) []int64 {
	for i := range v.sc {
		v.sc[i] = math.NaN()
	}
	v.inTok = int64(r.InputTokens)
	v.outTok = int64(r.OutputTokens)
	v.graded, v.passed, v.grade = r.Grade != "", r.Grade == GradePass, r.Grade
	v.cachedTok, v.cachePrompt, v.cacheRep = cachedOf(r)
	v.cancelled = r.Cancelled()
	if !r.OK() {
		return scratch
	}
	v.ok = true
	v.met = sm.meets(r)
	toMs := func(ns int64) float64 { return float64(ns) / 1e6 }
	if r.FirstToken > 0 {
		v.sc[sfTTFT] = toMs(r.FirstToken - r.Intended)
	}
	if ns, ok := ttfatNs(r); ok {
		v.sc[sfTTFAT] = toMs(ns)
	}
	if r.End > 0 {
		v.sc[sfE2E] = toMs(r.End - r.Intended)
		if r.OutputTokens > 0 {
			v.sc[sfNorm] = toMs((r.End - r.Intended) / int64(r.OutputTokens))
		}
	}
	if r.Sent > 0 && r.Dispatched > 0 {
		v.sc[sfQueue] = toMs(r.Sent - r.Dispatched)
	}
	if t, ok := tpotNs(r); ok {
		v.sc[sfTPOT] = toMs(t)
	}
	if g, ok := maxGapNs(r.Chunks); ok {
		v.sc[sfMaxGap] = toMs(g)
	}
	if idx, ok := fluidityIndex(r, dl); ok {
		v.sc[sfFluid] = idx
		v.hasFlu = true
		v.fluidGE90 = idx >= 0.9
	}
	eachChunkValue(r, func(f int, _, n int64, sum float64) {
		v.sums[f] += sum
		v.cnt[f] += n
	})
	v.stalls, v.stalledNs = stallStats(r.Chunks, int64(o.StallThreshold))
	if r.FirstToken > 0 && r.End > r.FirstToken {
		v.decNs = r.End - r.FirstToken
	}
	return scratch
}

// eachChunkValue calls fn with every value of the binned families in a successful record:
// family f, the value (µs, or tokens for tokens_per_chunk) counted n times, adding sum to the
// family's exact sum (ms, or tokens). Each chunk gives its tokens and, after the first, the gap
// since the previous chunk (itl_chunk and itl); a chunk of k tokens gives itl k−1 more gaps of
// 0, as its tokens arrived together. A gap above BurstWindow ends a burst: it gives itl_burst,
// and the burst before it its tokens (tokens_per_burst; the last burst at the end).
func eachChunkValue(r *Record, fn func(f int, v, n int64, sum float64)) {
	if !r.OK() {
		return
	}
	var burst int64 // tokens of the burst in progress (derive.go: bursts)
	for i, c := range r.Chunks {
		k := chunkTokens(c)
		fn(bfTPC, k, 1, float64(k))
		if i > 0 {
			gap := c.T - r.Chunks[i-1].T
			us := nsToMicros(gap)
			ms := float64(gap) / 1e6
			fn(bfChunk, us, 1, ms)
			fn(bfITL, us, 1, ms)
			if burstGap(gap) {
				fn(bfBurst, us, 1, ms)
				fn(bfTPB, burst, 1, float64(burst))
				burst = 0
			}
		}
		burst += k
		if k > 1 {
			fn(bfITL, 0, k-1, 0)
		}
	}
	if burst > 0 {
		fn(bfTPB, burst, 1, float64(burst))
	}
}

// matchUnits returns the pairs (base unit, cand unit) of ids on both sides, in base order.
func matchUnits(b, c *sideData) [][2]int {
	var out [][2]int
	for i, id := range b.units {
		if j, ok := c.unitIdx[id]; ok {
			out = append(out, [2]int{i, j})
		}
	}
	return out
}

// restrict keeps only the records of the matched units, renumbering units in pair order so
// that unit i on both sides is the same id.
func (d *sideData) restrict(pairs [][2]int, which int) *sideData {
	if len(pairs) == len(d.units) {
		return d.renumber(pairs, which)
	}
	nd := &sideData{unitIdx: map[string]int{}, hashes: d.hashes, runs: d.runs, runWin: d.runWin, window: d.window, srcs: d.srcs, steady: d.steady}
	for newU, p := range pairs {
		old := p[which]
		id := d.units[old]
		nd.units = append(nd.units, id)
		nd.unitIdx[id] = newU
		var list []int32
		for _, ri := range d.unitRecs[old] {
			v := d.recs[ri]
			v.unit = newU
			list = append(list, int32(len(nd.recs)))
			nd.recs = append(nd.recs, v)
		}
		nd.unitRecs = append(nd.unitRecs, list)
	}
	return nd
}

// renumber is restrict when every unit of d is matched: nothing is dropped, so the records
// stay where they are (a copy of them would double the side's memory) and only the units are
// put in pair order.
func (d *sideData) renumber(pairs [][2]int, which int) *sideData {
	newOf := make([]int, len(d.units))
	units := make([]string, len(pairs))
	unitRecs := make([][]int32, len(pairs))
	for newU, p := range pairs {
		old := p[which]
		newOf[old] = newU
		units[newU], unitRecs[newU] = d.units[old], d.unitRecs[old]
		d.unitIdx[d.units[old]] = newU
	}
	for i := range d.recs {
		d.recs[i].unit = newOf[d.recs[i].unit]
	}
	d.units, d.unitRecs = units, unitRecs
	return d
}
