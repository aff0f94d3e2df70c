package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/racebuild"
)

// TestPassRateIntervalMatchesSeed reproduces seed 000's point about eval-set size: at p = 0.7
// a 95% interval is about ±13 points with 50 questions and about ±3 with 1,000, and it
// covers the true rate about 95% of the time (over many seeded trials).
func TestPassRateIntervalMatchesSeed(t *testing.T) {
	for _, c := range []struct {
		n             int
		half, halfTol float64
	}{{50, 0.127, 0.015}, {1000, 0.0284, 0.003}} {
		const trials = 300
		var sumHalf float64
		covered := 0
		for trial := 0; trial < trials; trial++ {
			rng := rand.New(rand.NewPCG(uint64(trial), uint64(c.n)))
			passed := 0
			for i := 0; i < c.n; i++ {
				if rng.Float64() < 0.7 {
					passed++
				}
			}
			lo, hi := PassRateInterval(passed, c.n, QualityResamples, QualityConfidence)
			if lo > float64(passed)/float64(c.n) || hi < float64(passed)/float64(c.n) {
				t.Fatalf("n=%d: interval [%v, %v] does not hold its own rate %d/%d", c.n, lo, hi, passed, c.n)
			}
			sumHalf += (hi - lo) / 2
			if lo <= 0.7 && 0.7 <= hi {
				covered++
			}
		}
		half := sumHalf / trials
		if math.Abs(half-c.half) > c.halfTol {
			t.Errorf("n=%d: mean half-width %.4f, want %.4f ± %.4f (seed 000: ±13 points at 50, ±3 at 1000)", c.n, half, c.half, c.halfTol)
		}
		if cov := float64(covered) / trials; cov < 0.91 || cov > 0.985 {
			t.Errorf("n=%d: coverage %.3f of a 95%% interval", c.n, cov)
		}
	}
	// All passed: Wilson's interval, 92.9%–100% at n = 50 (the rule of three says ≥ 94%).
	if lo, hi := PassRateInterval(50, 50, QualityResamples, QualityConfidence); hi != 1 || lo < 0.92 || lo > 0.94 {
		t.Errorf("all passed: [%v, %v]", lo, hi)
	}
	if lo, hi := PassRateInterval(0, 50, QualityResamples, QualityConfidence); lo != 0 || hi < 0.06 || hi > 0.08 {
		t.Errorf("none passed: [%v, %v]", lo, hi)
	}
	a1, b1 := PassRateInterval(31, 50, QualityResamples, QualityConfidence)
	a2, b2 := PassRateInterval(31, 50, QualityResamples, QualityConfidence)
	if a1 != a2 || b1 != b2 {
		t.Errorf("the same counts gave [%v,%v] and [%v,%v]", a1, b1, a2, b2)
	}
}

// gradeTwoSystems is seed 000's simulation: shared difficulty, 10% coin-flip grades, v2
// truly better (71.6% against 68%).
func gradeTwoSystems(n int, seed uint64) (v1, v2 []float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	grade := func(d, bar float64) float64 {
		if rng.Float64() > 0.1 {
			if d < bar {
				return 1
			}
			return 0
		}
		if rng.Float64() < 0.5 {
			return 1
		}
		return 0
	}
	for i := 0; i < n; i++ {
		d := rng.Float64()
		v1 = append(v1, grade(d, 0.70))
		v2 = append(v2, grade(d, 0.74))
	}
	return v1, v2
}

// TestPairedIntervalMatchesSeed: seed 000's example — at n = 1000 the paired interval on the
// difference is about ±2.4 points where two separate accuracies would give about ±4, and at
// n = 50 it cannot exclude zero for a true +3.6 points.
func TestPairedIntervalMatchesSeed(t *testing.T) {
	const trials = 40
	var half1000, half50 float64
	excl50 := 0
	for trial := 0; trial < trials; trial++ {
		for _, n := range []int{50, 1000} {
			v1, v2 := gradeTwoSystems(n, uint64(trial*7919+n))
			d := make([]float64, n)
			for i := range d {
				d[i] = v2[i] - v1[i]
			}
			lo, hi := MeanInterval(d, 2000, 0.95, uint64(trial))
			if n == 1000 {
				half1000 += (hi - lo) / 2 / trials
			} else {
				half50 += (hi - lo) / 2 / trials
				if lo > 0 {
					excl50++
				}
			}
		}
	}
	if half1000 < 0.020 || half1000 > 0.029 {
		t.Errorf("paired half-width at n=1000: %.4f, want ≈ 0.024", half1000)
	}
	if half50 < 0.07 {
		t.Errorf("paired half-width at n=50: %.4f, want wide (≈ ±0.07 or more)", half50)
	}
	if excl50 > trials/3 {
		t.Errorf("n=50 excluded zero in %d of %d trials; the seed says it mostly cannot", excl50, trials)
	}
}

func gradedSide(n int, grade func(i int) string) SliceSource {
	var out SliceSource
	for i := 0; i < n; i++ {
		r := timeline(fmt.Sprintf("q%03d", i), float64(i)*20, 50, constGaps(4, 10), nil)
		r.Class = []string{"json", "tools"}[i%2]
		r.Grade = grade(i)
		if r.Grade != GradePass {
			r.GradeNote = "expect[0] failed"
		}
		out = append(out, r)
	}
	return out
}

func TestSummarizeQuality(t *testing.T) {
	src := gradedSide(40, func(i int) string {
		switch {
		case i%10 == 3:
			return GradeTool
		case i%10 == 4:
			return GradeFormat
		}
		return GradePass
	})
	src = append(src, timeline("ungraded", 900, 50, constGaps(4, 10), nil))
	sum, err := Summarize(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := sum.Quality
	if q == nil || q.Graded != 40 || q.Passed != 32 || q.PassRate != 0.8 || q.Failures[GradeTool] != 4 || q.Failures[GradeFormat] != 4 {
		t.Fatalf("quality %+v", q)
	}
	if !(q.CILow < 0.8 && q.CIHigh > 0.8) || q.ByClass["tools"].Graded != 20 || q.ByClass["tools"].Failures[GradeTool] != 4 || q.ByClass["json"].Failures[GradeFormat] != 4 {
		t.Errorf("quality %+v", q)
	}
	if q.Examples[GradeTool] != "q003: expect[0] failed" {
		t.Errorf("examples %v", q.Examples)
	}
	if v, err := MetricValue(sum, "quality"); err != nil || v != 0.8 {
		t.Errorf("MetricValue(quality) = %v, %v", v, err)
	}
	th, err := ParseFailOn("quality<-1pp")
	if err != nil || len(th) != 1 || th[0].Metric != "quality.pass_rate" || th[0].Value != -0.01 {
		t.Fatalf("ParseFailOn: %+v %v", th, err)
	}
	if _, err := ParseFailOn("quality>+1pp"); err == nil || !strings.Contains(err.Error(), "better when higher") {
		t.Errorf("a rise rule on quality: %v", err)
	}
	ts := sum.TimeSeries
	var graded, passed int
	for i := range ts.Graded {
		graded += ts.Graded[i]
		passed += ts.Passed[i]
		if ts.Graded[i] > 0 && !near(ts.PassRate[i], float64(ts.Passed[i])/float64(ts.Graded[i]), 1e-12) || ts.Graded[i] == 0 && !math.IsNaN(ts.PassRate[i]) {
			t.Errorf("bucket %d: pass rate %v of %d/%d", i, ts.PassRate[i], ts.Passed[i], ts.Graded[i])
		}
	}
	if graded != 40 || passed != 32 || len(ts.Graded) != len(ts.T) {
		t.Errorf("time series: %d graded, %d passed over %d buckets", graded, passed, len(ts.Graded))
	}
	merged, err := MergeSummaries(MergeShards, sum, sum)
	if err != nil {
		t.Fatal(err)
	}
	if mt := merged.TimeSeries; mt == nil || len(mt.Graded) != len(ts.Graded) || mt.Graded[0] != 2*ts.Graded[0] || len(mt.PassRate) != len(mt.T) {
		t.Errorf("merged time series quality: %+v", mt)
	}
	if m := merged.Quality; m == nil || m.Graded != 80 || m.Passed != 64 || m.ByClass["json"].Graded != 40 || m.CIHigh-m.CILow >= q.CIHigh-q.CILow {
		t.Errorf("merged quality %+v", m)
	}
	plain, _ := Summarize(gradedSide(5, func(int) string { return "" }), Options{})
	if plain.Quality != nil || plain.TimeSeries.Graded != nil || plain.TimeSeries.PassRate != nil {
		t.Errorf("ungraded run has a quality block: %+v", plain.Quality)
	}
}

// TestComparePairedQuality: a candidate that fails 15% of the requests the base passed is a
// regression under quality<-1pp, with the paired interval; the same run against itself is
// unchanged and passes the gate.
func TestComparePairedQuality(t *testing.T) {
	base := gradedSide(400, func(i int) string {
		if i%10 == 0 {
			return GradeCheck
		}
		return GradePass
	})
	cand := gradedSide(400, func(i int) string {
		if i%10 == 0 || i%7 == 1 {
			return GradeTool
		}
		return GradePass
	})
	th, _ := ParseFailOn("quality<-1pp")
	c, err := Compare([]Source{base}, []Source{cand}, CompareOptions{Thresholds: th, Resamples: 200, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	md := metricByName(t, c, "quality.pass_rate")
	q := c.Quality
	if q == nil || q.Paired != 400 || q.BaseOnly != 52 || q.CandOnly != 0 {
		t.Fatalf("quality comparison %+v", q)
	}
	if md.Method != MethodPairedBootstrap || !near(md.Delta, -52.0/400, 1e-12) || md.CIHigh >= -0.01 || md.Verdict != VerdictRegressed || !c.Regressed {
		t.Errorf("quality row %+v", md)
	}
	if q.CandFailures[GradeTool] != 92 || q.BaseFailures[GradeCheck] != 40 {
		t.Errorf("failures %v / %v", q.BaseFailures, q.CandFailures)
	}
	aa, err := Compare([]Source{base}, []Source{base}, CompareOptions{Thresholds: th, Resamples: 200, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if md := metricByName(t, aa, "quality.pass_rate"); md.Verdict != VerdictUnchanged || aa.Regressed {
		t.Errorf("A/A quality row %+v", md)
	}
	// A candidate that fails everything the base passed: no resample varies, yet the gate
	// must see the regression.
	allPass := gradedSide(60, func(int) string { return GradePass })
	allFail := gradedSide(60, func(int) string { return GradeTool })
	bc, err := Compare([]Source{allPass}, []Source{allFail}, CompareOptions{Thresholds: th, Resamples: 50})
	if err != nil {
		t.Fatal(err)
	}
	if md := metricByName(t, bc, "quality.pass_rate"); md.Delta != -1 || md.CIHigh >= -0.9 || md.CILow != -1 || md.Verdict != VerdictRegressed {
		t.Errorf("all flipped: %+v", md)
	}
	plainSide := gradedSide(50, func(int) string { return "" })
	nc, err := Compare([]Source{plainSide}, []Source{plainSide}, CompareOptions{Thresholds: th, Resamples: 50})
	if err != nil {
		t.Fatal(err)
	}
	if nc.Regressed || !strings.Contains(strings.Join(nc.Warnings, "\n"), "a side has no graded request") {
		t.Errorf("a quality rule without grades: regressed %v, warnings %v", nc.Regressed, nc.Warnings)
	}
	// Without grades quality is not among the default metrics.
	plain := gradedSide(50, func(int) string { return "" })
	pc, err := Compare([]Source{plain}, []Source{plain}, CompareOptions{Resamples: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range pc.Metrics {
		if m.Name == "quality.pass_rate" {
			t.Errorf("ungraded comparison has a quality row")
		}
	}
}

// TestPairedQualityFalseAlarmsAndPower: over seeded trials of two systems whose requests pass
// independently with the same per-request probability (difficulty varies by request), the
// paired quality row calls a change in about 5% of them (the interval's level), never far
// more; when the candidate loses 12 points (about 3.4 standard errors of the paired
// difference at n = 300) it calls the regression in most trials.
func TestPairedQualityFalseAlarmsAndPower(t *testing.T) {
	racebuild.Heavy(t)
	const trials, n = 200, 300 // A/A trials; the power check takes 100
	side := func(r *rand.Rand, p []float64, drop float64) SliceSource {
		return gradedSide(n, func(i int) string {
			if r.Float64() < p[i]-drop {
				return GradePass
			}
			return GradeCheck
		})
	}
	calls := func(drop float64, trials int) (changed, regressed int) {
		for trial := 0; trial < trials; trial++ {
			r := rand.New(rand.NewPCG(uint64(trial), uint64(drop*1000)+17))
			p := make([]float64, n)
			for i := range p {
				p[i] = 0.5 + 0.5*r.Float64() // request difficulty: pass probability 50–100%
			}
			base, cand := side(r, p, 0), side(r, p, drop)
			c, err := Compare([]Source{base}, []Source{cand}, CompareOptions{Metrics: []string{"quality.pass_rate"}, Resamples: 400, Seed: uint64(trial)})
			if err != nil {
				t.Fatal(err)
			}
			md := metricByName(t, c, "quality.pass_rate")
			if md.CILow > 0 || md.CIHigh < 0 {
				changed++
			}
			if md.CIHigh < 0 {
				regressed++
			}
		}
		return changed, regressed
	}
	if fa, _ := calls(0, trials); fa > trials*9/100 || fa == 0 {
		t.Errorf("A/A: the interval excluded zero in %d of %d trials, want about 5%% (1–9%%)", fa, trials)
	} else {
		t.Logf("A/A: %d of %d trials called a change", fa, trials)
	}
	const powerTrials = 100
	if _, reg := calls(0.12, powerTrials); reg < powerTrials*8/10 {
		t.Errorf("a 12-point drop called in %d of %d trials, want at least 80%%", reg, powerTrials)
	} else {
		t.Logf("12-point drop: called in %d of %d trials", reg, powerTrials)
	}
}
