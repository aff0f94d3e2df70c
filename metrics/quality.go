package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Quality under load (issue 17). Package quality grades each response against its trace
// line's expect checks and stamps the outcome on the record (Record.Grade); this file turns
// grades into numbers: pass rates with bootstrap intervals, failures by reason, the paired
// comparison of two runs. The method is the percentile bootstrap of docs/ARCHITECTURE.md
// ("Quality under load"): resample the graded requests with replacement QualityResamples
// times, take the 2.5th and 97.5th percentile of the resampled pass rates.

// Grades of Record.Grade: "" for a request that was not graded (no expect checks, or never
// sent), GradePass, or the reason it failed, in the taxonomy of failure modes (timeout,
// format parse failure, empty content, wrong tool or parameters) plus the request failures
// and checks that fit none of them.
const (
	GradePass = "pass"
	// GradeTimeout: the request timed out (any timeout_* failure kind).
	GradeTimeout = "timeout"
	// GradeRequestFailed: the request failed otherwise (HTTP error, connection, broken or
	// malformed stream, server error, canceled).
	GradeRequestFailed = "request_failed"
	// GradeEmpty: the response carried no answer text and no tool call.
	GradeEmpty = "empty"
	// GradeFormat: the output should be JSON (a json or json_schema check) and does not parse.
	GradeFormat = "format"
	// GradeTool: wrong tool or parameters: no tool call, a function not in the request's
	// tools, arguments that do not parse, violate the parameters schema, carry extra fields
	// or differ from the expected ones.
	GradeTool = "tool"
	// GradeCheck: another check failed (exact, contains, not_contains, regex, json_schema
	// on valid JSON, number, max_tokens_used).
	GradeCheck = "check"
)

// GradeReasons lists the failure grades in report order.
var GradeReasons = []string{GradeTimeout, GradeRequestFailed, GradeEmpty, GradeFormat, GradeTool, GradeCheck}

// MaxGradeNote bounds Record.GradeNote.
const MaxGradeNote = 256

// Defaults of the quality intervals: seed 000's setting (10,000 resamples, 95%).
const (
	QualityResamples  = 10000
	QualityConfidence = 0.95
)

// Quality is the summary's quality block: the steady-state graded requests, overall and per
// class.
type Quality struct {
	QualityCounts
	// Confidence and Resamples describe the intervals.
	Confidence float64 `json:"confidence"`
	Resamples  int     `json:"resamples"`
	// Examples names, per failure reason, the first failing request and why ("id: note").
	Examples map[string]string        `json:"examples,omitempty"`
	ByClass  map[string]QualityCounts `json:"by_class,omitempty"`
	// Judge is present when an LLM judge graded the run (llmbench run --judge-endpoint).
	Judge *JudgeSummary `json:"judge,omitempty"`
}

// QualityCounts are the counts and pass rate of one group of graded requests.
type QualityCounts struct {
	Graded int `json:"graded"`
	Passed int `json:"passed"`
	// PassRate is Passed / Graded; [CILow, CIHigh] its percentile bootstrap interval.
	PassRate float64 `json:"pass_rate"`
	CILow    float64 `json:"ci_low"`
	CIHigh   float64 `json:"ci_high"`
	// Failures counts the failed requests by reason (GradeReasons).
	Failures map[string]int `json:"failures"`
}

// JudgeSummary is what an LLM judge said about a run (package quality/judge fills it).
type JudgeSummary struct {
	Endpoint string `json:"endpoint"`
	Model    string `json:"model"`
	// Mode is "rubric" (each answer graded alone) or "pairwise" (ab: A against B).
	Mode string `json:"mode"`
	// Judged counts the answers (rubric) or pairs (pairwise) sent to the judge; Errors the
	// judge calls that failed or whose verdict line did not parse.
	Judged int `json:"judged"`
	Errors int `json:"errors"`
	// Rubric mode: Passed of the Judged-Errors parsed verdicts, with a bootstrap interval.
	Passed   int     `json:"passed,omitempty"`
	PassRate float64 `json:"pass_rate,omitempty"`
	CILow    float64 `json:"ci_low,omitempty"`
	CIHigh   float64 `json:"ci_high,omitempty"`
	// Pairwise mode: verdicts that agreed in both orders, split by winner, and the pairs whose
	// two verdicts disagreed (position bias), which count for neither side.
	WinsA        int `json:"wins_a,omitempty"`
	WinsB        int `json:"wins_b,omitempty"`
	Ties         int `json:"ties,omitempty"`
	Inconsistent int `json:"inconsistent,omitempty"`
	// PreferB is (WinsB - WinsA) / consistent pairs, with a bootstrap interval.
	PreferB     float64 `json:"prefer_b,omitempty"`
	PreferBLow  float64 `json:"prefer_b_ci_low,omitempty"`
	PreferBHigh float64 `json:"prefer_b_ci_high,omitempty"`
	// Token cost of the judge calls (the judge server's usage).
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// Calls is the number of HTTP calls made (two per pair in pairwise mode).
	Calls int `json:"calls"`
}

// qualTally accumulates grades.
type qualTally struct {
	graded, passed int
	failures       map[string]int
}

func (q *qualTally) add(grade string) {
	if grade == "" {
		return
	}
	q.graded++
	if grade == GradePass {
		q.passed++
		return
	}
	if q.failures == nil {
		q.failures = map[string]int{}
	}
	q.failures[grade]++
}

func (q *qualTally) counts() QualityCounts {
	c := QualityCounts{Graded: q.graded, Passed: q.passed, Failures: map[string]int{}}
	for k, v := range q.failures {
		c.Failures[k] = v
	}
	if q.graded > 0 {
		c.PassRate = float64(q.passed) / float64(q.graded)
		c.CILow, c.CIHigh = PassRateInterval(q.passed, q.graded, QualityResamples, QualityConfidence)
	}
	return c
}

// PassRateInterval is the percentile bootstrap interval of a pass rate of passed out of n
// (seed 000's bootstrap_ci on 0/1 grades): each resample draws n grades with replacement,
// so its number of passes is Binomial(n, passed/n), drawn exactly by inverting the binomial
// distribution function; the interval is the resampled rates of rank ⌊a·R⌋ and ⌊(1−a)·R⌋
// (a = (1−conf)/2) in ascending order. The generator is seeded from n and passed, so the
// same counts always give the same interval. At 0% and 100% it is Wilson's score interval.
func PassRateInterval(passed, n, resamples int, conf float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 0
	}
	p := float64(passed) / float64(n)
	if passed == 0 || passed == n {
		// Every resample is the same: the bootstrap interval would have no width, which is
		// no evidence. Wilson's score interval stays honest at 0% and 100% (proportion.go).
		return wilson(p, float64(n), distuv.UnitNormal.Quantile(1-(1-conf)/2))
	}
	cdf := binomialCDF(n, p)
	rng := rand.New(rand.NewPCG(uint64(n), uint64(passed)^0x51a7e))
	rates := make([]float64, resamples)
	for i := range rates {
		k := sort.SearchFloat64s(cdf, rng.Float64())
		rates[i] = float64(min(k, n)) / float64(n)
	}
	return percentiles(rates, conf)
}

// binomialCDF returns P(K <= k) for k = 0..n, K ~ Binomial(n, p), 0 < p < 1.
func binomialCDF(n int, p float64) []float64 {
	cdf := make([]float64, n+1)
	lgn, _ := math.Lgamma(float64(n) + 1)
	lp, lq := math.Log(p), math.Log1p(-p)
	var acc float64
	for k := 0; k <= n; k++ {
		lk, _ := math.Lgamma(float64(k) + 1)
		lnk, _ := math.Lgamma(float64(n-k) + 1)
		acc += math.Exp(lgn - lk - lnk + float64(k)*lp + float64(n-k)*lq)
		cdf[k] = acc
	}
	cdf[n] = math.Max(cdf[n], 1) // rounding must not leave a gap at the top
	return cdf
}

// percentiles sorts xs and returns the values of rank ⌊a·R⌋ and ⌊(1−a)·R⌋ (0-based), as
// seed 000's bootstrap_ci does.
func percentiles(xs []float64, conf float64) (float64, float64) {
	slices.Sort(xs)
	a := (1 - conf) / 2
	n := len(xs)
	return xs[min(int(a*float64(n)), n-1)], xs[min(int((1-a)*float64(n)), n-1)]
}

// MeanInterval is the percentile bootstrap interval of the mean of xs (seed 000's
// bootstrap_ci, for paired differences): resamples means of len(xs) values drawn with
// replacement, seeded by seed.
func MeanInterval(xs []float64, resamples int, conf float64, seed uint64) (lo, hi float64) {
	n := len(xs)
	if n == 0 {
		return 0, 0
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	means := make([]float64, resamples)
	for i := range means {
		var s float64
		for j := 0; j < n; j++ {
			s += xs[rng.IntN(n)]
		}
		means[i] = s / float64(n)
	}
	return percentiles(means, conf)
}

// QualityComparison is the paired quality comparison of two sides: per request id graded on
// both, the difference of the pass outcomes (candidate minus base, each side's mean over its
// runs), with the percentile bootstrap interval of the mean difference (seed 000's example).
type QualityComparison struct {
	// Paired counts the ids graded on both sides.
	Paired   int     `json:"paired"`
	BaseRate float64 `json:"base_pass_rate"`
	CandRate float64 `json:"cand_pass_rate"`
	Delta    float64 `json:"delta"`
	CILow    float64 `json:"ci_low"`
	CIHigh   float64 `json:"ci_high"`
	// BaseOnly counts ids that passed on the base side only (every run), CandOnly on the
	// candidate side only: the discordant pairs.
	BaseOnly   int     `json:"base_only"`
	CandOnly   int     `json:"cand_only"`
	Resamples  int     `json:"resamples"`
	Confidence float64 `json:"confidence"`
	// Failures by reason on each side, over the paired ids.
	BaseFailures map[string]int `json:"base_failures"`
	CandFailures map[string]int `json:"cand_failures"`
}

// qualityMetric is the registry name of the pass rate.
const qualityMetric = "quality.pass_rate"

// pairedQuality compares the graded units present on both sides.
func pairedQuality(bd, cd *sideData, conf float64, seed uint64) *QualityComparison {
	type acc struct{ n, pass float64 }
	perUnit := func(d *sideData) map[string]*acc {
		m := map[string]*acc{}
		for i := range d.recs {
			r := &d.recs[i]
			if !r.graded {
				continue
			}
			id := d.units[r.unit]
			a := m[id]
			if a == nil {
				a = &acc{}
				m[id] = a
			}
			a.n++
			if r.passed {
				a.pass++
			}
		}
		return m
	}
	bu, cu := perUnit(bd), perUnit(cd)
	ids := make([]string, 0, len(bu))
	for id := range bu {
		if _, ok := cu[id]; ok {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sort.Strings(ids)
	qc := &QualityComparison{Paired: len(ids), Resamples: QualityResamples, Confidence: conf,
		BaseFailures: failuresOf(bd, bu), CandFailures: failuresOf(cd, cu)}
	diffs := make([]float64, len(ids))
	var sb, sc float64
	for i, id := range ids {
		b, c := bu[id].pass/bu[id].n, cu[id].pass/cu[id].n
		diffs[i] = c - b
		sb += b
		sc += c
		switch {
		case b == 1 && c == 0:
			qc.BaseOnly++
		case b == 0 && c == 1:
			qc.CandOnly++
		}
	}
	n := float64(len(ids))
	qc.BaseRate, qc.CandRate = sb/n, sc/n
	qc.Delta = qc.CandRate - qc.BaseRate
	resamples := QualityResamples
	if len(ids) > 5000 {
		resamples = DefaultResamples // bound the work: R·n draws
		qc.Resamples = resamples
	}
	qc.CILow, qc.CIHigh = MeanInterval(diffs, resamples, conf, seed)
	return qc
}

// failuresOf counts the failure reasons of the records of the units in keep.
func failuresOf[T any](d *sideData, keep map[string]T) map[string]int {
	out := map[string]int{}
	for i := range d.recs {
		r := &d.recs[i]
		if !r.graded || r.passed {
			continue
		}
		if _, ok := keep[d.units[r.unit]]; ok {
			out[r.grade]++
		}
	}
	return out
}

// finishPairedQuality sets the quality row of a paired comparison from qc (its percent fields
// come from relate, as every row's).
func finishPairedQuality(md *MetricDelta, qc *QualityComparison) {
	md.Base, md.Cand = qc.BaseRate, qc.CandRate
	md.Delta = qc.Delta
	md.CILow, md.CIHigh = qc.CILow, qc.CIHigh
	md.Method = MethodPairedBootstrap
	z := distuv.UnitNormal.Quantile(1 - (1-qc.Confidence)/2)
	if md.CILow == md.CIHigh && md.Delta != 0 {
		// Every paired request changed the same way (all passed on one side only): the
		// bootstrap has nothing to resample, but the evidence is not nil. The share of
		// requests that changed is then 1 of Paired, whose Wilson score interval bounds how
		// far the difference can be from Delta.
		lo, _ := wilson(1, float64(qc.Paired), z)
		md.CILow, md.CIHigh = min(md.Delta, md.Delta*lo), max(md.Delta, md.Delta*lo)
		qc.CILow, qc.CIHigh = md.CILow, md.CIHigh
		md.Note = "every paired request changed the same way; the interval is the Wilson score bound on the share that changed"
	}
	md.SE = (md.CIHigh - md.CILow) / (2 * z)
	if md.SE > 0 {
		md.PValue = 2 * (1 - distuv.UnitNormal.CDF(math.Abs(md.Delta)/md.SE))
		md.MDE = (z + distuv.UnitNormal.Quantile(MDEPower)) * md.SE
	} else {
		md.PValue = 1
		if md.Delta != 0 {
			md.PValue = 0
		}
	}
	if md.CILow == md.CIHigh && md.Delta == 0 {
		md.Verdict = VerdictUnchanged
		md.Note = "every paired request had the same outcome on both sides"
		return
	}
	verdictByInterval(md)
}

// noteGrade keeps the first failing request of each reason as an example.
func (s *summarizer) noteGrade(r *Record) {
	if r.Grade == "" || r.Grade == GradePass {
		return
	}
	if s.gradeExamples == nil {
		s.gradeExamples = map[string]string{}
	}
	if _, ok := s.gradeExamples[r.Grade]; !ok {
		ex := r.ID
		if r.GradeNote != "" {
			ex += ": " + r.GradeNote
		}
		s.gradeExamples[r.Grade] = TruncateError(ex)
	}
}

// quality builds the summary's quality block (nil when no steady record was graded).
func (s *summarizer) quality() *Quality {
	if s.head.q.graded == 0 {
		return nil
	}
	q := &Quality{QualityCounts: s.head.q.counts(), Confidence: QualityConfidence, Resamples: QualityResamples,
		Examples: s.gradeExamples}
	if s.anyClass {
		for name, g := range s.classes {
			if g.q.graded > 0 {
				if q.ByClass == nil {
					q.ByClass = map[string]QualityCounts{}
				}
				q.ByClass[name] = g.q.counts()
			}
		}
	}
	return q
}

// mergeQuality adds the quality counts of several summaries (shards or repeats) and
// recomputes the intervals; examples come from the first summary that has one per reason.
// A judge block is not merged (judge the merged run instead).
func mergeQuality(sums []*Summary) *Quality {
	var head qualTally
	classes := map[string]*qualTally{}
	examples := map[string]string{}
	add := func(t *qualTally, c QualityCounts) {
		t.graded += c.Graded
		t.passed += c.Passed
		for k, v := range c.Failures {
			if t.failures == nil {
				t.failures = map[string]int{}
			}
			t.failures[k] += v
		}
	}
	for _, s := range sums {
		if s.Quality == nil {
			continue
		}
		add(&head, s.Quality.QualityCounts)
		for name, c := range s.Quality.ByClass {
			if classes[name] == nil {
				classes[name] = &qualTally{}
			}
			add(classes[name], c)
		}
		for k, v := range s.Quality.Examples {
			if _, ok := examples[k]; !ok {
				examples[k] = v
			}
		}
	}
	if head.graded == 0 {
		return nil
	}
	q := &Quality{QualityCounts: head.counts(), Confidence: QualityConfidence, Resamples: QualityResamples}
	if len(examples) > 0 {
		q.Examples = examples
	}
	for name, t := range classes {
		if q.ByClass == nil {
			q.ByClass = map[string]QualityCounts{}
		}
		q.ByClass[name] = t.counts()
	}
	return q
}

// hasGrades reports whether any record of d was graded.
func (d *sideData) hasGrades() bool {
	for i := range d.recs {
		if d.recs[i].graded {
			return true
		}
	}
	return false
}

func hasSpec(specs []metricSpec, name string) bool {
	for _, sp := range specs {
		if sp.info.Name == name {
			return true
		}
	}
	return false
}

// grow extends xs with zeros to length n.
func grow(xs []int, n int) []int {
	for len(xs) < n {
		xs = append(xs, 0)
	}
	return xs
}

// passRates is passed/graded per bucket, NaN where nothing was graded (nil without grades).
func passRates(graded, passed []int) Series {
	if graded == nil {
		return nil
	}
	out := make(Series, len(graded))
	for i, g := range graded {
		out[i] = math.NaN()
		if g > 0 {
			out[i] = float64(passed[i]) / float64(g)
		}
	}
	return out
}
