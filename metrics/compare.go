package metrics

import (
	"errors"
	"fmt"
	"math"
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
	// DesignedHitRate is each side's designed prefix-cache hit rate, base then cand, when the
	// caller knows it from the runs' summaries (PooledDesignedHitRate); a side's pooled
	// summary supplies its own when Summary.DesignedReuse is set. The prefix-cache confound
	// check needs one of them (cacheconfound.go); nil: unknown.
	DesignedHitRate [2]*float64
}

// Compare compares a candidate against a base. Each side may pool several runs (Sources);
// only steady-state records are used.
//
// Statistics (the two-level variance model, variance.go): every metric is computed from
// per-request values. A resample draws each side's runs with replacement (when it has two or
// more), then contiguous time blocks of request ids; when ids match across the sides (same
// trace) the same blocks are drawn on both sides, so the per-request difficulty shared by both
// sides cancels. The interval of a change is delta ± t·SE from the resampled changes (finishDelta).
// Per-run scalars (throughput, goodput per second) get Welch t intervals over the runs' values
// and are not assessable with one run per side; proportions get Newcombe score intervals on
// effective sample sizes (proportion.go). A zero-width interval gives no verdict. The metrics
// named in Thresholds are judged by their own intervals; the labels of the others are
// Holm-adjusted (multiplicity.go). Descriptive metrics get VerdictChanged, never better or
// worse. Percentiles use the package's quantile rule (registry.go); ITL and tokens-per-chunk
// percentiles are taken from log-linear bins of under 0.8% width, while their means are exact.
// Throughput and goodput per second divide by the resampled runs' steady windows. In paired
// mode the metrics cover the matched ids only; the side summaries cover every record.
func Compare(base, cand []Source, opts CompareOptions) (*Comparison, error) {
	if len(base) == 0 || len(cand) == 0 {
		return nil, errors.New("compare: each side needs at least one result set")
	}
	opts = opts.withDefaults()
	specs, err := compileMetrics(opts.Metrics, opts.Thresholds)
	if err != nil {
		return nil, err
	}
	baseSum, candSum, full, err := summarizeSides(base, cand, opts)
	if err != nil {
		return nil, err
	}
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
	cmp.ByModel = CompareModels(baseSum, candSum) // per-request model (issue 38)

	bothGraded := bd.hasGrades() && cd.hasGrades()
	if hasSpec(specs, qualityMetric) && !bothGraded {
		cmp.Warnings = append(cmp.Warnings, "quality.pass_rate: a side has no graded request (its trace carries no expect checks, or its run kept no grades), so quality was not compared and no rule on it was judged")
	}
	if len(opts.Metrics) == 0 && bothGraded && !hasSpec(specs, qualityMetric) {
		// Both sides graded their responses: quality joins the default metrics.
		info, _ := LookupMetric(qualityMetric)
		specs = append(specs, metricSpec{info: info, scalar: lookupScalar(qualityMetric)})
	}
	if len(opts.Metrics) == 0 && (bd.hasCacheReports() || cd.hasCacheReports()) && !hasSpec(specs, PrefixCacheMetric) {
		// A side reported cached prompt tokens: the hit rate joins the default metrics.
		info, _ := LookupMetric(PrefixCacheMetric)
		specs = append(specs, metricSpec{info: info, scalar: lookupScalar(PrefixCacheMetric)})
	}
	bd, cd, pairs := pairSides(cmp, bd, cd, opts)
	bp := planBlocks(bd)
	cp := bp
	if !cmp.Paired {
		cp = planBlocks(cd)
	}
	cmp.Method = varianceMethod(bd.runs, cd.runs, &bp, &cp, cmp.Paired, pairs, opts)
	cmp.Multiplicity = MultiplicityHolm
	cmp.BlockLength = bp.length

	if cmp.Paired && hasSpec(specs, qualityMetric) {
		cmp.Quality = pairedQuality(bd, cd, opts.Confidence, opts.Seed)
	}
	bg, err := cellsOf(bd, &bp)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	cg, err := cellsOf(cd, &cp)
	if err != nil {
		return nil, fmt.Errorf("cand: %w", err)
	}
	cmp.Metrics = metricDeltas(bd, cd, bg, cg, &bp, &cp, specs, cmp.Paired, len(base) > 1, len(cand) > 1, opts)
	finishRows(cmp)
	applyCacheConfound(cmp, baseSum.PrefixCache, candSum.PrefixCache, opts)
	runs := max(bd.runs, cd.runs)
	cmp.Warnings = append(cmp.Warnings, judge(cmp.Metrics, specs, opts.Thresholds, opts.Confidence, runs)...)
	if bd.runs < 2 && cd.runs < 2 {
		cmp.Warnings = append(cmp.Warnings, "one run per side: intervals cover the variation inside each run (time blocks), not between runs, and per-run numbers (throughput, goodput per second) are not assessable; give each side several runs (ab --runs, or several result sets per side) for decisions that hold up on a rerun")
	}
	cmp.Regressions = []string{}
	for _, md := range cmp.Metrics {
		if md.Verdict == VerdictRegressed {
			cmp.Regressed = true
			cmp.Regressions = append(cmp.Regressions, md.Name)
		}
	}

	cmp.Base = side(opts.BaseLabel, len(base), bd, baseSum)
	cmp.Cand = side(opts.CandLabel, len(cand), cd, candSum)
	if err := overlayCDFs(cmp, baseSum, candSum); err != nil {
		return nil, err
	}
	return cmp, nil
}

// finishRows completes every row before judging: the paired quality row from its own bootstrap,
// then each row's percent change from its absolute interval (relate).
func finishRows(cmp *Comparison) {
	for i := range cmp.Metrics {
		md := &cmp.Metrics[i]
		if md.Name == qualityMetric && cmp.Quality != nil {
			finishPairedQuality(md, cmp.Quality)
		}
		relate(md)
	}
}

// withDefaults fills the zero fields of o with their documented defaults.
func (o CompareOptions) withDefaults() CompareOptions {
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = DefaultConfidence
	}
	if o.BaseLabel == "" {
		o.BaseLabel = "base"
	}
	if o.CandLabel == "" {
		o.CandLabel = "cand"
	}
	return o
}

// summarizeSides summarizes both sides with the same options: a derived stall threshold (from
// the base's burst cadence, or the SLO) and derived fluidity deadlines are resolved on the base
// side and applied to both, so the same gap is a stall on either side; both sides' Stalls name
// the threshold's origin. full is the options both sides' records are loaded with.
func summarizeSides(base, cand []Source, opts CompareOptions) (baseSum, candSum *Summary, full Options, err error) {
	sopts := opts.Summary
	baseSum, err = Summarize(MultiSource(base...), sopts)
	if err != nil {
		return nil, nil, full, fmt.Errorf("base: %w", err)
	}
	relative := sopts.StallThreshold <= 0
	baseDeadlines(&sopts, baseSum)
	candSum, err = Summarize(MultiSource(cand...), sopts)
	if err != nil {
		return nil, nil, full, fmt.Errorf("cand: %w", err)
	}
	if relative {
		b := baseSum.Stalls
		rule := b.ThresholdRule
		if slo := sopts.SLO; slo.MaxGap <= 0 && slo.TPOT <= 0 && slo.ITLP99 <= 0 {
			rule += " of " + opts.BaseLabel // derived from the base's run, not from the SLO
		}
		rule += ", applied to both sides"
		shared := func(st *Stalls) {
			st.ThresholdRule, st.Source, st.BurstCadenceMs = rule, b.Source, b.BurstCadenceMs
		}
		shared(&baseSum.Stalls)
		shared(&candSum.Stalls)
		for _, sum := range [...]*Summary{baseSum, candSum} {
			for _, cs := range sum.ByClass {
				shared(&cs.Stalls)
			}
		}
	}
	return baseSum, candSum, sopts.withDefaults(), nil
}

// pairSides decides whether the comparison is paired by request id (sets cmp.Paired and
// cmp.MatchedIDs, and warns when ids match only in part) and, when it is, keeps only the
// matched ids on both sides. It returns the sides to compare and how many ids matched.
func pairSides(cmp *Comparison, bd, cd *sideData, opts CompareOptions) (*sideData, *sideData, int) {
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
	return bd, cd, len(pairs)
}

// metricDeltas computes every metric's change with its interval, by the method its kind
// calls for: per-run scalars from the spread between runs, proportions from score intervals
// on effective sample sizes, everything else from the two-level bootstrap.
func metricDeltas(bd, cd *sideData, bg, cg *sideCells, bp, cp *blockPlan, specs []metricSpec, paired, baseSpread, candSpread bool, opts CompareOptions) []MetricDelta {
	baseVals := bg.eval(specs, nil, bd.window)
	candVals := cg.eval(specs, nil, cd.window)
	deltas := bootstrap(bd, cd, bg, cg, specs, paired, opts)
	factor := runFactor(bd.runs, cd.runs)
	df := bootDF(bd.runs, cd.runs, min(bp.blocks, cp.blocks))
	out := make([]MetricDelta, 0, len(specs))
	for i, sp := range specs {
		md := MetricDelta{Name: sp.info.Name, Unit: sp.info.Unit, Better: sp.info.Better, Base: baseVals[i], Cand: candVals[i]}
		bs, cs := bg.spread(sp, bd.runs, bd.runWin), cg.spread(sp, cd.runs, cd.runWin)
		switch {
		case perRunScalar(sp.info.Name):
			finishPerRun(&md, bs.Values, cs.Values, opts.Confidence)
		case isProportion(sp.info.Name) && !math.IsNaN(md.Base) && !math.IsNaN(md.Cand):
			pb, okB := proportionSide(bd, bp, sp.info.Name)
			pc, okC := proportionSide(cd, cp, sp.info.Name)
			if okB && okC {
				finishProportion(&md, pb, pc, opts.Confidence)
			} else {
				md.Verdict = VerdictNA
			}
		default:
			finishDelta(&md, deltas.abs[i], opts.Confidence, opts.Resamples, factor, df)
		}
		if baseSpread {
			md.BaseSpread = bs
		}
		if candSpread {
			md.CandSpread = cs
		}
		out = append(out, md)
	}
	return out
}

// overlayCDFs adds both sides' CDFs of every overlay family (the comparison report's charts).
func overlayCDFs(cmp *Comparison, baseSum, candSum *Summary) error {
	for _, f := range families {
		if !f.Overlay {
			continue
		}
		b, errB := histDist(baseSum, f.Name)
		c, errC := histDist(candSum, f.Name)
		if errB != nil || errC != nil {
			return errors.Join(errB, errC)
		}
		cmp.CDFs[f.Name] = CDFPair{Unit: f.Unit, Base: b.CDF, Cand: c.CDF}
	}
	return nil
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

// histDist rebuilds a distribution (with its CDF) from a summary's histogram encodings: name
// is a key of Summary.Histograms such as "ttft", "fluidity" or "class/chat/itl". Values come
// out in the family's unit (ms; tokens; the fluidity index in [0, 1]). A missing key gives an
// empty Dist.
func histDist(sum *Summary, name string) (Dist, error) {
	prefix, fam := name[:strings.LastIndexByte(name, '/')+1], name[strings.LastIndexByte(name, '/')+1:]
	f, ok := LookupFamily(fam)
	if !ok {
		return Dist{}, fmt.Errorf("unknown histogram %q", name)
	}
	if fam == histNames[hITLBurst] {
		// Not stored (encodeGroup): the chunk gaps above the burst window.
		chunk, err := histOf(sum, prefix+histNames[hITLChunk])
		burst := newHist()
		splitBursts(chunk, burst)
		return burst.dist(f.Scale), err
	}
	h, err := histOf(sum, name)
	return h.dist(f.Scale), err
}

// histOf decodes the histogram called name in sum; a missing one is empty.
func histOf(sum *Summary, name string) (*hist, error) {
	enc, ok := sum.Histograms[name]
	if !ok {
		return newHist(), nil
	}
	h, err := decodeHist(enc)
	if err != nil {
		return newHist(), fmt.Errorf("histogram %s: %w", name, err)
	}
	return h, nil
}

// metricSpec is a compiled metric.
type metricSpec struct {
	info   MetricInfo
	family string  // distribution family, or "" for a scalar
	stat   string  // the family's statistic
	scalar *Scalar // the registry entry of a scalar metric
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
		specs = append(specs, metricSpec{info: info, family: info.Family, stat: info.Stat, scalar: lookupScalar(info.Name)})
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
		info, _ := LookupMetric(t.Metric)
		if err := checkRuleDirection(info, t.Op, t.Metric, strings.TrimPrefix(t.String(), t.Metric+t.Op)); err != nil {
			return nil, fmt.Errorf("--fail-on %s: %w", t.String(), err)
		}
	}
	return specs, nil
}
