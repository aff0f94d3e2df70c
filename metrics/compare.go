package metrics

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Defaults of CompareOptions.
const (
	DefaultResamples  = 2000
	DefaultConfidence = 0.95
	// minPairedFraction: requests are paired when the ids on both sides overlap in at least
	// half of the larger side; otherwise the comparison falls back to unpaired resampling.
	minPairedFraction = 0.5
	maxMismatchIDs    = 20
)

// DefaultCompareMetrics is the metric set Compare reports when CompareOptions.Metrics is empty.
var DefaultCompareMetrics = []string{
	"ttft.p50", "ttft.p95", "ttft.p99",
	"tpot.p50", "tpot.p95", "tpot.p99",
	"itl.p50", "itl.p95", "itl.p99",
	"itl_chunk.p50", "itl_chunk.p99",
	"e2e.p50", "e2e.p95", "e2e.p99",
	"max_gap.p99",
	"throughput.requests_per_s", "throughput.output_tokens_per_s",
	"goodput.fraction", "goodput.requests_per_s",
	"stalls.requests_fraction", "fluidity.mean", "fluidity.fraction_ge_0_9",
	"tokens_per_chunk.mean", "failures.fraction",
}

// CompareOptions configures Compare.
type CompareOptions struct {
	// Summary carries the SLOs, stall threshold and fluidity deadlines, applied identically to
	// both sides. A relative stall threshold is resolved on the base side and then used as an
	// absolute threshold for both, so the same gap is a stall on either side.
	Summary Options
	// Metrics to compare (names or aliases, see LookupMetric); DefaultCompareMetrics when
	// empty. Metrics named by Thresholds are added when missing.
	Metrics    []string
	Thresholds []Threshold
	// Resamples is the number of bootstrap resamples (default DefaultResamples).
	Resamples int
	// Confidence is the two-sided interval level (default DefaultConfidence).
	Confidence float64
	// Seed seeds the resampling generator; the same inputs and seed give the same intervals.
	Seed uint64
	// Unpaired forces unpaired resampling even when request ids match.
	Unpaired bool
	// BaseLabel / CandLabel name the sides in the output (default "base" and "cand").
	BaseLabel, CandLabel string
}

// Compare compares a candidate against a base. Each side may pool several runs (Sources);
// only steady-state records are used.
//
// Statistics: every metric is computed from per-request values. When request ids match
// across the sides (same trace), the bootstrap is paired: each resample draws request ids
// with replacement and takes every record of a drawn id from both sides (all runs), so the
// per-request difficulty shared by both sides cancels. Otherwise each side's ids are
// resampled independently. The interval is the percentile interval of the resampled deltas
// (Resamples draws, fixed Seed). Percentiles use the nearest-rank rule HdrHistogram uses;
// ITL and tokens-per-chunk percentiles are taken from log-linear bins of under 0.8% width,
// while their means are exact. Throughput and goodput per second divide by the side's steady
// window (the sum of its runs' windows), held fixed while resampling. In paired mode the
// metrics cover the matched ids only; the side summaries cover every record.
func Compare(base, cand []Source, opts CompareOptions) (*Comparison, error) {
	if len(base) == 0 || len(cand) == 0 {
		return nil, errors.New("compare: each side needs at least one result set")
	}
	if opts.Resamples <= 0 {
		opts.Resamples = DefaultResamples
	}
	if opts.Confidence <= 0 || opts.Confidence >= 1 {
		opts.Confidence = DefaultConfidence
	}
	if opts.BaseLabel == "" {
		opts.BaseLabel = "base"
	}
	if opts.CandLabel == "" {
		opts.CandLabel = "cand"
	}
	specs, err := compileMetrics(opts.Metrics, opts.Thresholds)
	if err != nil {
		return nil, err
	}

	sopts := opts.Summary
	baseSum, err := Summarize(MultiSource(base...), sopts)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	relative := sopts.StallThreshold <= 0
	baseDeadlines(&sopts, baseSum)
	candSum, err := Summarize(MultiSource(cand...), sopts)
	if err != nil {
		return nil, fmt.Errorf("cand: %w", err)
	}
	if relative {
		rule := baseSum.Stalls.ThresholdRule + " of " + opts.BaseLabel + ", applied to both sides"
		baseSum.Stalls.ThresholdRule, candSum.Stalls.ThresholdRule = rule, rule
		for _, cs := range candSum.ByClass {
			cs.Stalls.ThresholdRule = rule
		}
		for _, cs := range baseSum.ByClass {
			cs.Stalls.ThresholdRule = rule
		}
	}
	full := sopts.withDefaults()

	bd, err := loadSide(base, &full)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	cd, err := loadSide(cand, &full)
	if err != nil {
		return nil, fmt.Errorf("cand: %w", err)
	}

	cmp := &Comparison{
		Schema:     ComparisonSchema,
		Resamples:  opts.Resamples,
		Confidence: opts.Confidence,
		Seed:       opts.Seed,
		Thresholds: opts.Thresholds,
		CDFs:       map[string]CDFPair{},
		Warnings:   []string{},
	}
	for _, w := range baseSum.Warnings {
		cmp.Warnings = append(cmp.Warnings, opts.BaseLabel+": "+w)
	}
	for _, w := range candSum.Warnings {
		cmp.Warnings = append(cmp.Warnings, opts.CandLabel+": "+w)
	}
	cmp.Equivalence = equivalence(bd, cd)

	pairs := matchUnits(bd, cd)
	larger := max(len(bd.units), len(cd.units))
	cmp.MatchedIDs = len(pairs)
	paired := !opts.Unpaired && len(pairs) >= 2 && float64(len(pairs)) >= minPairedFraction*float64(larger)
	switch {
	case opts.Unpaired:
	case !paired:
		cmp.Warnings = append(cmp.Warnings, fmt.Sprintf("request ids match for only %d of %d requests: the comparison is unpaired, so its intervals are wider", len(pairs), larger))
	case len(pairs) < larger:
		cmp.Warnings = append(cmp.Warnings, fmt.Sprintf("%d request ids appear on one side only; the paired metrics use the %d that appear on both", larger-len(pairs), len(pairs)))
	}
	cmp.Paired = paired

	if paired {
		bd = bd.restrict(pairs, 0)
		cd = cd.restrict(pairs, 1)
	}
	conf := fmt.Sprintf("%g%%", opts.Confidence*100)
	if paired {
		cmp.Method = fmt.Sprintf("paired bootstrap over %d request ids matched by id (all runs of an id drawn together on both sides), %d resamples, %s percentile intervals, seed %d", len(pairs), opts.Resamples, conf, opts.Seed)
	} else {
		cmp.Method = fmt.Sprintf("unpaired bootstrap (each side's request ids resampled independently), %d resamples, %s percentile intervals, seed %d", opts.Resamples, conf, opts.Seed)
	}

	baseVals := bd.eval(specs, nil, bd.window)
	candVals := cd.eval(specs, nil, cd.window)
	deltas := bootstrap(bd, cd, specs, paired, opts)

	for i, sp := range specs {
		md := MetricDelta{Name: sp.info.Name, Unit: sp.info.Unit, Better: sp.info.Better, Base: baseVals[i], Cand: candVals[i]}
		finishDelta(&md, deltas.abs[i], deltas.rel[i], opts.Confidence, opts.Resamples)
		applyThresholds(&md, sp.info, opts.Thresholds)
		if len(base) > 1 {
			md.BaseSpread = bd.spread(sp)
		}
		if len(cand) > 1 {
			md.CandSpread = cd.spread(sp)
		}
		if md.Verdict == VerdictRegressed {
			cmp.Regressed = true
			cmp.Regressions = append(cmp.Regressions, md.Name)
		}
		cmp.Metrics = append(cmp.Metrics, md)
	}
	if cmp.Regressions == nil {
		cmp.Regressions = []string{}
	}

	cmp.Base = side(opts.BaseLabel, len(base), bd, baseSum)
	cmp.Cand = side(opts.CandLabel, len(cand), cd, candSum)
	for _, name := range []string{"ttft", "tpot", "itl", "itl_chunk", "e2e", "max_gap", "tokens_per_chunk", "fluidity"} {
		b, errB := histDist(baseSum, name)
		c, errC := histDist(candSum, name)
		if errB != nil || errC != nil {
			return nil, errors.Join(errB, errC)
		}
		cmp.CDFs[name] = CDFPair{Unit: distFamilies[name], Base: b.CDF, Cand: c.CDF}
	}
	return cmp, nil
}

func side(label string, runs int, d *sideData, sum *Summary) ComparisonSide {
	s := *sum
	s.Histograms = nil
	s.TimeSeries = nil
	cs := ComparisonSide{Label: label, Runs: runs, Requests: len(d.recs), Summary: &s}
	for i := range d.recs {
		if d.recs[i].ok {
			cs.Succeeded++
		}
	}
	return cs
}

// HistogramDist rebuilds a distribution (with its CDF) from a summary's histogram encodings:
// name is a key of Summary.Histograms such as "ttft", "fluidity" or "class/chat/itl". Values
// come out in the Summary's units (ms; tokens; the fluidity index in [0, 1]). A missing key
// gives an empty Dist.
func HistogramDist(sum *Summary, name string) (Dist, error) {
	return histDist(sum, name)
}

func histDist(sum *Summary, name string) (Dist, error) {
	enc, ok := sum.Histograms[name]
	if !ok {
		return Dist{}, nil
	}
	h, err := decodeHist(enc)
	if err != nil {
		return Dist{}, fmt.Errorf("histogram %s: %w", name, err)
	}
	base := name[strings.LastIndexByte(name, '/')+1:]
	for i, n := range histNames {
		if n == base {
			return h.dist(histScale(i)), nil
		}
	}
	return Dist{}, fmt.Errorf("unknown histogram %q", name)
}

// metricSpec is a compiled metric.
type metricSpec struct {
	info   MetricInfo
	family string // distribution family, or "" for a scalar
	stat   string
}

func compileMetrics(names []string, th []Threshold) ([]metricSpec, error) {
	if len(names) == 0 {
		names = DefaultCompareMetrics
	}
	var specs []metricSpec
	seen := map[string]bool{}
	addName := func(n string) error {
		info, err := LookupMetric(n)
		if err != nil {
			return err
		}
		if seen[info.Name] {
			return nil
		}
		seen[info.Name] = true
		sp := metricSpec{info: info}
		if fam, stat, ok := strings.Cut(info.Name, "."); ok {
			if _, isDist := distFamilies[fam]; isDist {
				sp.family, sp.stat = fam, stat
			}
		}
		specs = append(specs, sp)
		return nil
	}
	for _, n := range names {
		if err := addName(n); err != nil {
			return nil, fmt.Errorf("compare metrics: %w", err)
		}
	}
	for _, t := range th {
		if err := addName(t.Metric); err != nil {
			return nil, fmt.Errorf("--fail-on: %w", err)
		}
	}
	return specs, nil
}

// reqVals are the per-request values of one steady-state record.
type reqVals struct {
	unit int // index into sideData.units
	run  int
	ok   bool
	met  bool

	// Scalar families in ms (NaN: undefined for this request), indexed by scalarFam.
	sc [nScalarFam]float64

	// Binned families: ITL per token, per chunk (µs bins) and tokens per chunk, with exact sums.
	bins [nBinFam]sparseHist
	sums [nBinFam]float64 // sum of values (ms, or tokens)
	cnt  [nBinFam]int64

	stalls            int64
	stalledNs, decNs  int64
	inTok, outTok     int64
	fluidGE90, hasFlu bool
}

const (
	sfTTFT = iota
	sfTPOT
	sfE2E
	sfQueue
	sfMaxGap
	sfNorm
	sfFluid
	nScalarFam
)

var scalarFamIdx = map[string]int{"ttft": sfTTFT, "tpot": sfTPOT, "e2e": sfE2E, "queue": sfQueue, "max_gap": sfMaxGap, "normalized": sfNorm, "fluidity": sfFluid}

const (
	bfITL = iota
	bfChunk
	bfTPC
	nBinFam
)

var binFamIdx = map[string]int{"itl": bfITL, "itl_chunk": bfChunk, "tokens_per_chunk": bfTPC}

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
	// sorted[f] lists the records with a defined scalar family f, by value.
	sorted [nScalarFam][]int32
	// csr[f] packs every record's bins of binned family f contiguously.
	csr [nBinFam]binCSR
}

// binCSR stores per-record sparse bins in flat arrays: record i owns [start[i], start[i+1]).
type binCSR struct {
	start []int32
	bin   []uint16
	cnt   []int32
}

type hashSeen struct {
	first    string
	mismatch bool
	any      bool
}

func loadSide(srcs []Source, o *Options) (*sideData, error) {
	d := &sideData{unitIdx: map[string]int{}, hashes: map[string]*hashSeen{}, runs: len(srcs)}
	dl := o.deadlines()
	sm := &summarizer{opts: *o}
	var scratch []int64
	for run, src := range srcs {
		var start, end int64
		has := false
		anon := 0
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
			v.unit, v.run = u, run
			scratch = fillReqVals(&v, r, dl, o, sm, scratch)
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
		w := 0.0
		if has {
			w = seconds(end - start)
		}
		d.runWin = append(d.runWin, w)
		d.window += w
	}
	d.sortFamilies()
	return d, nil
}

func fillReqVals(v *reqVals, r *Record, dl fluidityDeadlines, o *Options, sm *summarizer, scratch []int64) []int64 {
	for i := range v.sc {
		v.sc[i] = math.NaN()
	}
	v.inTok = int64(r.InputTokens)
	v.outTok = int64(r.OutputTokens)
	if !r.OK() {
		return scratch
	}
	v.ok = true
	v.met = sm.meets(r)
	toMs := func(ns int64) float64 { return float64(ns) / 1e6 }
	if r.FirstToken > 0 {
		v.sc[sfTTFT] = toMs(r.FirstToken - r.Intended)
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
	for i, c := range r.Chunks {
		k := chunkTokens(c)
		v.bins[bfTPC] = v.bins[bfTPC].add(k, 1)
		v.sums[bfTPC] += float64(k)
		v.cnt[bfTPC]++
		if i > 0 {
			gap := c.T - r.Chunks[i-1].T
			us := nsToMicros(gap)
			v.bins[bfChunk] = v.bins[bfChunk].add(us, 1)
			v.bins[bfITL] = v.bins[bfITL].add(us, 1)
			v.sums[bfChunk] += toMs(gap)
			v.sums[bfITL] += toMs(gap)
			v.cnt[bfChunk]++
			v.cnt[bfITL]++
		}
		if k > 1 {
			v.bins[bfITL] = v.bins[bfITL].add(0, k-1)
			v.cnt[bfITL] += k - 1
		}
	}
	v.stalls, v.stalledNs = stallStats(r.Chunks, int64(o.StallThreshold))
	if r.FirstToken > 0 && r.End > r.FirstToken {
		v.decNs = r.End - r.FirstToken
	}
	return scratch
}

func (d *sideData) sortFamilies() {
	for f := range d.csr {
		c := binCSR{start: make([]int32, 0, len(d.recs)+1)}
		for i := range d.recs {
			c.start = append(c.start, int32(len(c.bin)))
			for _, bc := range d.recs[i].bins[f] {
				c.bin = append(c.bin, uint16(min(int(bc.bin), maxBin)))
				c.cnt = append(c.cnt, int32(bc.count))
			}
		}
		c.start = append(c.start, int32(len(c.bin)))
		d.csr[f] = c
	}
	for f := range d.sorted {
		var idx []int32
		for i := range d.recs {
			if !math.IsNaN(d.recs[i].sc[f]) {
				idx = append(idx, int32(i))
			}
		}
		sort.SliceStable(idx, func(a, b int) bool { return d.recs[idx[a]].sc[f] < d.recs[idx[b]].sc[f] })
		d.sorted[f] = idx
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
	nd := &sideData{unitIdx: map[string]int{}, hashes: d.hashes, runs: d.runs, runWin: d.runWin, window: d.window}
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
	nd.sortFamilies()
	return nd
}

// eval computes every metric with per-record weights w (nil: all 1) over window seconds.
func (d *sideData) eval(specs []metricSpec, w []int32, window float64) []float64 {
	out := make([]float64, len(specs))
	var acc *scalarAcc
	var famStats [nScalarFam]*famStat
	var binStats [nBinFam]*famStat
	var dense []int64
	var needQ [nBinFam]bool
	for _, sp := range specs {
		if f, ok := binFamIdx[sp.family]; ok && sp.stat != "mean" {
			needQ[f] = true
		}
	}
	for k, sp := range specs {
		if sp.family != "" {
			var st *famStat
			if f, ok := scalarFamIdx[sp.family]; ok {
				if famStats[f] == nil {
					famStats[f] = d.scalarStat(f, w)
				}
				st = famStats[f]
			} else {
				f := binFamIdx[sp.family]
				if binStats[f] == nil {
					if dense == nil {
						dense = make([]int64, maxBin+1)
					}
					binStats[f] = d.binStat(f, w, dense, sp.family != "tokens_per_chunk", needQ[f])
				}
				st = binStats[f]
			}
			out[k] = st.get(sp.stat)
			continue
		}
		if acc == nil {
			acc = d.scalars(w)
		}
		out[k] = acc.metric(sp.info.Name, window)
	}
	return out
}

// scalarAcc holds the weighted sums behind every scalar metric.
type scalarAcc struct {
	all, ok, met, failed float64
	okIn, okOut          float64
	stallReqs, stalls    float64
	stalledNs, decNs     float64
	fluN, fluGE          float64
}

func (d *sideData) scalars(w []int32) *scalarAcc {
	a := &scalarAcc{}
	for i := range d.recs {
		x := 1.0
		if w != nil {
			if w[i] == 0 {
				continue
			}
			x = float64(w[i])
		}
		r := &d.recs[i]
		a.all += x
		if !r.ok {
			a.failed += x
			continue
		}
		a.ok += x
		a.okIn += x * float64(r.inTok)
		a.okOut += x * float64(r.outTok)
		if r.met {
			a.met += x
		}
		if r.stalls > 0 {
			a.stallReqs += x
		}
		a.stalls += x * float64(r.stalls)
		a.stalledNs += x * float64(r.stalledNs)
		a.decNs += x * float64(r.decNs)
		if r.hasFlu {
			a.fluN += x
			if r.fluidGE90 {
				a.fluGE += x
			}
		}
	}
	return a
}

// metric evaluates a scalar metric (NaN when its denominator is 0).
func (a *scalarAcc) metric(name string, window float64) float64 {
	var num, den float64
	switch name {
	case "throughput.requests_per_s":
		num, den = a.ok, window
	case "throughput.input_tokens_per_s":
		num, den = a.okIn, window
	case "throughput.output_tokens_per_s":
		num, den = a.okOut, window
	case "goodput.fraction":
		num, den = a.met, a.all
	case "goodput.requests_per_s":
		num, den = a.met, window
	case "stalls.requests_fraction":
		num, den = a.stallReqs, a.ok
	case "stalls.per_request":
		num, den = a.stalls, a.ok
	case "stalls.time_fraction":
		num, den = a.stalledNs, a.decNs
	case "fluidity.fraction_ge_0_9":
		num, den = a.fluGE, a.fluN
	case "failures.fraction":
		num, den = a.failed, a.all
	}
	if den <= 0 {
		return math.NaN()
	}
	return num / den
}

// famStat holds the statistics of one family under one weighting.
type famStat struct {
	mean, p50, p90, p95, p99, p999, max float64
	empty                               bool
}

func (f *famStat) get(stat string) float64 {
	if f.empty {
		return math.NaN()
	}
	switch stat {
	case "mean":
		return f.mean
	case "p50":
		return f.p50
	case "p90":
		return f.p90
	case "p95":
		return f.p95
	case "p99":
		return f.p99
	case "p999":
		return f.p999
	}
	return f.max
}

var statQuantiles = [...]float64{0.5, 0.9, 0.95, 0.99, 0.999}

// rankOf is HdrHistogram's nearest-rank rule: round(q * total), at least 1.
func rankOf(q, total float64) float64 {
	r := math.Floor(q*total + 0.5)
	if r < 1 {
		r = 1
	}
	if r > total {
		r = total
	}
	return r
}

func ranksFor(total float64) (r [len(statQuantiles)]float64) {
	for i, q := range statQuantiles {
		r[i] = rankOf(q, total)
	}
	return r
}

func (d *sideData) scalarStat(f int, w []int32) *famStat {
	var total, sum float64
	for _, i := range d.sorted[f] {
		x := 1.0
		if w != nil {
			x = float64(w[i])
		}
		total += x
		sum += x * d.recs[i].sc[f]
	}
	if total == 0 {
		return &famStat{empty: true}
	}
	st := &famStat{mean: sum / total}
	targets := [len(statQuantiles)]*float64{&st.p50, &st.p90, &st.p95, &st.p99, &st.p999}
	ranks := ranksFor(total)
	var cum float64
	q := 0
	var last float64
	for _, i := range d.sorted[f] {
		x := 1.0
		if w != nil {
			x = float64(w[i])
		}
		if x == 0 {
			continue
		}
		cum += x
		last = d.recs[i].sc[f]
		for q < len(ranks) && cum >= ranks[q] {
			*targets[q] = last
			q++
		}
	}
	st.max = last
	return st
}

// maxBin is the largest bin index binOf returns for values up to one hour in µs.
var maxBin = int(binOf(histHighest))

func (d *sideData) binStat(f int, w []int32, dense []int64, micros, quantiles bool) *famStat {
	var total int64
	var sum float64
	lo, hi := len(dense), -1
	c := &d.csr[f]
	for i := range d.recs {
		x := int64(1)
		if w != nil {
			x = int64(w[i])
		}
		if x == 0 {
			continue
		}
		r := &d.recs[i]
		total += x * r.cnt[f]
		sum += float64(x) * r.sums[f]
		if !quantiles {
			continue
		}
		a, b := c.start[i], c.start[i+1]
		if a == b {
			continue
		}
		bins, cnts := c.bin[a:b], c.cnt[a:b]
		lo, hi = min(lo, int(bins[0])), max(hi, int(bins[len(bins)-1]))
		for k, bin := range bins {
			dense[bin] += x * int64(cnts[k])
		}
	}
	if total == 0 {
		return &famStat{empty: true}
	}
	st := &famStat{mean: sum / float64(total)}
	if !quantiles {
		return st
	}
	scale := 1.0
	if micros {
		scale = 1e-3
	}
	targets := [len(statQuantiles)]*float64{&st.p50, &st.p90, &st.p95, &st.p99, &st.p999}
	ranks := ranksFor(float64(total))
	var cum int64
	q := 0
	for b := lo; b <= hi; b++ {
		n := dense[b]
		if n == 0 {
			continue
		}
		dense[b] = 0
		cum += n
		v := binValue(uint32(b)) * scale
		for q < len(ranks) && float64(cum) >= ranks[q] {
			*targets[q] = v
			q++
		}
		st.max = v
	}
	return st
}

// bootResult holds the bootstrap deltas per metric (absolute and percent of base).
type bootResult struct {
	abs, rel [][]float64
}

func bootstrap(bd, cd *sideData, specs []metricSpec, paired bool, opts CompareOptions) bootResult {
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	res := bootResult{abs: make([][]float64, len(specs)), rel: make([][]float64, len(specs))}
	bw := make([]int32, len(bd.recs))
	cw := make([]int32, len(cd.recs))
	bu := make([]int32, len(bd.units))
	cu := make([]int32, len(cd.units))
	draw := func(units []int32) {
		clear(units)
		n := len(units)
		for k := 0; k < n; k++ {
			units[rng.IntN(n)]++
		}
	}
	spread := func(d *sideData, units, w []int32) {
		for u, recs := range d.unitRecs {
			for _, ri := range recs {
				w[ri] = units[u]
			}
		}
	}
	for b := 0; b < opts.Resamples; b++ {
		draw(bu)
		if paired {
			copy(cu, bu)
		} else {
			draw(cu)
		}
		spread(bd, bu, bw)
		spread(cd, cu, cw)
		bv := bd.eval(specs, bw, bd.window)
		cv := cd.eval(specs, cw, cd.window)
		for i := range specs {
			if math.IsNaN(bv[i]) || math.IsNaN(cv[i]) {
				continue
			}
			res.abs[i] = append(res.abs[i], cv[i]-bv[i])
			if bv[i] != 0 {
				res.rel[i] = append(res.rel[i], (cv[i]-bv[i])/math.Abs(bv[i])*100)
			}
		}
	}
	return res
}

// percentileInterval is the (1-conf)/2 and 1-(1-conf)/2 order statistics of xs (sorted here).
func percentileInterval(xs []float64, conf float64) (float64, float64) {
	slices.Sort(xs)
	n := len(xs)
	a := (1 - conf) / 2
	lo := int(a * float64(n))
	hi := int((1 - a) * float64(n))
	if hi >= n {
		hi = n - 1
	}
	return xs[lo], xs[hi]
}

func finishDelta(md *MetricDelta, abs, rel []float64, conf float64, resamples int) {
	if math.IsNaN(md.Base) || math.IsNaN(md.Cand) {
		md.Base, md.Cand = zeroNaN(md.Base), zeroNaN(md.Cand)
		md.Verdict = VerdictNA
		return
	}
	md.Delta = md.Cand - md.Base
	if md.Base != 0 {
		md.DeltaPct = md.Delta / math.Abs(md.Base) * 100
	}
	// Fewer than half the resamples defined (e.g. a metric that exists in few requests).
	if len(abs) == 0 || len(abs) < resamples/2 {
		md.Verdict = VerdictNA
		return
	}
	md.CILow, md.CIHigh = percentileInterval(abs, conf)
	if len(rel) > 0 {
		md.CILowPct, md.CIHighPct = percentileInterval(rel, conf)
	}
	switch {
	case md.CILow > 0:
		md.Verdict = worseOrBetter(md.Better, true)
	case md.CIHigh < 0:
		md.Verdict = worseOrBetter(md.Better, false)
	default:
		md.Verdict = VerdictUnchanged
	}
}

func worseOrBetter(better string, increased bool) string {
	if (better == "lower") == increased {
		return VerdictWorse
	}
	return VerdictBetter
}

func zeroNaN(f float64) float64 {
	if math.IsNaN(f) {
		return 0
	}
	return f
}

// applyThresholds marks md regressed when a rule on its metric is broken with confidence.
func applyThresholds(md *MetricDelta, info MetricInfo, th []Threshold) {
	for _, t := range th {
		if t.Metric != info.Name {
			continue
		}
		if md.Threshold == "" {
			md.Threshold = t.Text
		} else {
			md.Threshold += "," + t.Text
		}
		if md.Verdict == VerdictNA {
			continue
		}
		lo, hi := md.CILow, md.CIHigh
		if t.Relative {
			if md.Base == 0 {
				continue
			}
			lo, hi = md.CILowPct, md.CIHighPct
		}
		if (t.Op == ">" && lo > t.Value) || (t.Op == "<" && hi < t.Value) {
			md.Verdict = VerdictRegressed
		}
	}
}

// spread computes metric k per run of the side.
func (d *sideData) spread(sp metricSpec) *Spread {
	w := make([]int32, len(d.recs))
	s := &Spread{Runs: d.runs}
	one := []metricSpec{sp}
	for run := 0; run < d.runs; run++ {
		for i := range d.recs {
			w[i] = 0
			if d.recs[i].run == run {
				w[i] = 1
			}
		}
		v := d.eval(one, w, d.runWin[run])[0]
		s.Values = append(s.Values, zeroNaN(v))
	}
	s.Min, s.Max = s.Values[0], s.Values[0]
	var sum float64
	for _, v := range s.Values {
		s.Min, s.Max = min(s.Min, v), max(s.Max, v)
		sum += v
	}
	s.Mean = sum / float64(len(s.Values))
	if len(s.Values) > 1 {
		var ss float64
		for _, v := range s.Values {
			ss += (v - s.Mean) * (v - s.Mean)
		}
		s.StdDev = math.Sqrt(ss / float64(len(s.Values)-1))
	}
	if s.Mean != 0 {
		s.CVPct = s.StdDev / math.Abs(s.Mean) * 100
	}
	return s
}

// equivalence compares output hashes per id across both sides.
func equivalence(b, c *sideData) *Equivalence {
	eq := &Equivalence{}
	for id := range b.unitIdx {
		if _, ok := c.unitIdx[id]; !ok {
			continue
		}
		hb, hc := b.hashes[id], c.hashes[id]
		if hb == nil || hc == nil {
			eq.Unchecked++
			continue
		}
		eq.Compared++
		if hb.mismatch || hc.mismatch || hb.first != hc.first {
			eq.Mismatched++
			eq.MismatchIDs = append(eq.MismatchIDs, id)
		}
	}
	sort.Strings(eq.MismatchIDs)
	if len(eq.MismatchIDs) > maxMismatchIDs {
		eq.MismatchIDs = eq.MismatchIDs[:maxMismatchIDs]
	}
	if eq.Compared == 0 {
		return nil
	}
	return eq
}
