package history

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"time"
)

// DefaultCheckMetrics are the metrics Check watches when none are named: the headline
// latencies, throughput and goodput (the metrics of the compare gate's default rules).
var DefaultCheckMetrics = []string{"ttft.p95", "tpot.p95", "max_gap.p99", "e2e.p95", "throughput.output_tokens_per_s", "goodput.fraction"}

// DefaultMinChange is the smallest relative change Check reports (3%).
const DefaultMinChange = 0.03

// CheckOptions configure Check.
type CheckOptions struct {
	// Metrics to watch (see LookupMetric); DefaultCheckMetrics when empty. A named metric that
	// no selected run recorded is an error; a default one is skipped.
	Metrics []string
	// Filter selects the runs (tags, trace fingerprint, model).
	Filter Filter
	// MinChange is the smallest relative change of the mean reported (0.03: 3%); 0 takes
	// DefaultMinChange, a negative value reports every significant change.
	MinChange float64
	// Since: only a bad change whose first run started at or after Since fails the check
	// (zero: any). Older changes are still reported.
	Since time.Time
	// Detect tunes the change-point detection.
	Detect DetectOptions
	// Confidence is the level of the before/after intervals (default 0.95).
	Confidence float64
}

// Interval is a segment's mean with its confidence interval: Student t over the segment's
// runs, whose spread is the night-to-night noise, with the runs' own noise as its floor: the
// variance of a run is the larger of the segment's spread and the mean of its runs' own
// squared standard errors (when they were recorded), so a segment whose few runs happen to
// agree closely is not credited with more precision than each run has.
type Interval struct {
	Mean float64 `json:"mean"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
	Runs int     `json:"runs"`
	// WithinSE is the root mean square of the runs' own standard errors (0: none recorded).
	WithinSE float64 `json:"within_run_se,omitempty"`
	v        float64 // the variance of the mean
}

// Diff is one configuration fact that differs between the runs on either side of a change.
type Diff struct {
	Key    string `json:"key"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// Change is one change point of a series.
type Change struct {
	// Index is the position in the series of the first run after the change.
	Index  int       `json:"index"`
	RunID  int64     `json:"run_id"`
	Start  time.Time `json:"start"`
	Dir    string    `json:"results_dir"`
	PrevID int64     `json:"previous_run_id"`
	Before Interval  `json:"before"`
	After  Interval  `json:"after"`
	// Delta is After.Mean − Before.Mean; Relative is Delta / |Before.Mean| (±Inf from zero).
	Delta    float64 `json:"delta"`
	Relative float64 `json:"relative"`
	P        float64 `json:"p_value"`
	// Weak: significant only at the weak level, or a change no larger than the runs' own noise
	// (Within); more runs are needed to confirm it.
	Weak bool `json:"weak"`
	// Within: the change's interval from the two sides' intervals (see Interval) holds zero:
	// the change point stands out in the series, but no more than each run's own noise
	// explains, so it is weak.
	Within bool `json:"within_run_noise,omitempty"`
	// Kind is "regression", "improvement" or "change" (a descriptive metric).
	Kind string `json:"kind"`
	// Recent: the first run after the change started at or after CheckOptions.Since.
	Recent bool `json:"recent"`
	// Changed are the facts that changed at this run and stayed changed (same value on every
	// run of each side, up to five runs each way): what changed that night. Varying are facts
	// that also differ between the two runs but vary from run to run anyway.
	Changed []Diff `json:"changed"`
	Varying []Diff `json:"varying,omitempty"`
}

// Fails reports whether the change fails the check: a regression, not weak, recent.
func (c *Change) Fails() bool { return c.Kind == "regression" && !c.Weak && c.Recent }

// Point is one run's value in a series.
type Point struct {
	RunID int64     `json:"run_id"`
	Start time.Time `json:"start"`
	Dir   string    `json:"results_dir"`
	Value float64   `json:"value"`
	// Lo, Hi and SE are the run's own 95% interval and standard error (see metrics.RunInterval);
	// absent when the run was recorded without its records.
	Lo *float64 `json:"lo,omitempty"`
	Hi *float64 `json:"hi,omitempty"`
	SE *float64 `json:"se,omitempty"`
}

// Series is one metric of one configuration over its runs, with its change points.
type Series struct {
	Metric  string   `json:"metric"`
	Unit    string   `json:"unit"`
	Better  string   `json:"better"`
	Config  string   `json:"config"`
	Points  []Point  `json:"points"`
	Changes []Change `json:"changes"`
	// Short is true when the series has too few runs to test (fewer than 2 × MinSize).
	Short bool `json:"too_short,omitempty"`
	runs  []*Run
}

// CheckResult is the outcome of Check.
type CheckResult struct {
	Store     string    `json:"store"`
	Runs      int       `json:"runs"`
	Since     time.Time `json:"since,omitzero"`
	MinChange float64   `json:"min_change"`
	Alpha     float64   `json:"alpha"`
	WeakAlpha float64   `json:"weak_alpha"`
	MinSize   int       `json:"min_runs_each_side"`
	Series    []Series  `json:"series"`
	// Failed: some change fails the check (see Change.Fails).
	Failed bool `json:"failed"`
}

// ErrNoRuns is returned when no recorded run passes the filter.
var ErrNoRuns = errors.New("no runs")

// Check builds one series per metric and configuration from the store's runs and finds their
// change points.
func (s *Store) Check(ctx context.Context, o CheckOptions) (*CheckResult, error) {
	runs, err := s.Runs(ctx, o.Filter)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("history: %w in %s match %s; add results with history add, or loosen --where", ErrNoRuns, s.where, describeFilter(o.Filter))
	}
	res, err := CheckRuns(runs, o)
	if res != nil {
		res.Store = s.where
	}
	return res, err
}

func describeFilter(f Filter) string {
	if len(f.Where) == 0 {
		return "(no filter)"
	}
	var parts []string
	for _, k := range sortedKeys(f.Where) {
		parts = append(parts, k+"="+f.Where[k])
	}
	return strings.Join(parts, ",")
}

// CheckRuns is Check over runs already loaded (in run order).
func CheckRuns(runs []*Run, o CheckOptions) (*CheckResult, error) {
	det := o.Detect.withDefaults()
	minChange := o.MinChange
	if minChange == 0 {
		minChange = DefaultMinChange
	}
	conf := o.Confidence
	if conf <= 0 || conf >= 1 {
		conf = 0.95
	}
	names := o.Metrics
	explicit := len(names) > 0
	if !explicit {
		names = DefaultCheckMetrics
	}
	var infos []MetricInfo
	seen := map[string]bool{}
	for _, n := range names {
		mi, err := LookupMetric(n)
		if err != nil {
			return nil, fmt.Errorf("--metric %s: %w", quote(n), err)
		}
		if !seen[mi.Name] {
			seen[mi.Name] = true
			infos = append(infos, mi)
		}
	}
	// Configurations in order of their first run.
	var keys []string
	byKey := map[string][]*Run{}
	for _, r := range runs {
		k := ConfigKey(r)
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], r)
	}
	res := &CheckResult{Runs: len(runs), Since: o.Since, MinChange: math.Max(minChange, 0),
		Alpha: det.Alpha, WeakAlpha: det.WeakAlpha, MinSize: det.MinSize}
	for _, mi := range infos {
		recorded := false
		for _, k := range keys {
			sr := Series{Metric: mi.Name, Unit: mi.Unit, Better: mi.Better, Config: k}
			for _, r := range byKey[k] {
				if v, ok := r.Metrics[mi.Name]; ok && !math.IsNaN(v) {
					p := Point{RunID: r.ID, Start: r.Start, Dir: r.Dir, Value: v}
					if iv, ok := r.Intervals[mi.Name]; ok {
						p.Lo, p.Hi, p.SE = &iv.Lo, &iv.Hi, &iv.SE
					}
					sr.Points = append(sr.Points, p)
					sr.runs = append(sr.runs, r)
				}
			}
			if len(sr.Points) == 0 {
				continue
			}
			recorded = true
			analyze(&sr, det, minChange, conf, o.Since)
			for i := range sr.Changes {
				if sr.Changes[i].Fails() {
					res.Failed = true
				}
			}
			res.Series = append(res.Series, sr)
		}
		if !recorded && explicit {
			return nil, fmt.Errorf("--metric %s: none of the %d selected runs recorded it (see history show RUN for the metrics a run has)", mi.Name, len(runs))
		}
	}
	return res, nil
}

// analyze finds the change points of one series and describes each.
func analyze(sr *Series, det DetectOptions, minChange, conf float64, since time.Time) {
	x := make([]float64, len(sr.Points))
	se := make([]float64, len(sr.Points)) // NaN: not recorded
	for i, p := range sr.Points {
		x[i] = p.Value
		se[i] = math.NaN()
		if p.SE != nil {
			se[i] = *p.SE
		}
	}
	if len(x) < 2*det.MinSize {
		sr.Short = true
		return
	}
	h := fnv.New64a()
	h.Write([]byte(sr.Metric + "\x00" + sr.Config))
	det.Seed ^= h.Sum64()
	cps := Detect(x, det)
	bounds := []int{0}
	for _, c := range cps {
		bounds = append(bounds, c.Index)
	}
	bounds = append(bounds, len(x))
	for k, c := range cps {
		lo, mid, hi := bounds[k], bounds[k+1], bounds[k+2]
		ch := Change{Index: mid, P: c.P, Weak: c.Weak,
			Before: interval(x[lo:mid], se[lo:mid], conf), After: interval(x[mid:hi], se[mid:hi], conf)}
		ch.Delta = ch.After.Mean - ch.Before.Mean
		if ch.Before.WithinSE > 0 || ch.After.WithinSE > 0 {
			// Welch–Satterthwaite degrees of freedom of the two means' difference.
			vb, va := ch.Before.v, ch.After.v
			df := (vb + va) * (vb + va) / (vb*vb/float64(max(1, ch.Before.Runs-1)) + va*va/float64(max(1, ch.After.Runs-1)))
			half := tQuantile(1-(1-conf)/2, max(1, int(df))) * math.Sqrt(vb+va)
			if math.Abs(ch.Delta) <= half {
				ch.Within, ch.Weak = true, true
			}
		}
		switch {
		case ch.Before.Mean != 0:
			ch.Relative = ch.Delta / math.Abs(ch.Before.Mean)
		case ch.Delta > 0:
			ch.Relative = math.Inf(1)
		case ch.Delta < 0:
			ch.Relative = math.Inf(-1)
		}
		if minChange > 0 && math.Abs(ch.Relative) < minChange {
			continue
		}
		ch.Kind = kindOf(sr.Better, ch.Delta)
		p := sr.Points[mid]
		ch.RunID, ch.Start, ch.Dir, ch.PrevID = p.RunID, p.Start, p.Dir, sr.Points[mid-1].RunID
		ch.Recent = since.IsZero() || !p.Start.Before(since)
		ch.Changed, ch.Varying = configDiffs(sr.runs[lo:mid], sr.runs[mid:hi])
		sr.Changes = append(sr.Changes, ch)
	}
}

func kindOf(better string, delta float64) string {
	switch {
	case better == "lower" && delta > 0, better == "higher" && delta < 0:
		return "regression"
	case better == "lower" && delta < 0, better == "higher" && delta > 0:
		return "improvement"
	}
	return "change"
}

// diffWindow is how many runs on each side must agree for a fact to count as "changed".
const diffWindow = 5

// configDiffs lists the facts that differ between the last run before and the first run after
// a change: Changed when each side's nearest runs (up to diffWindow) all agree, Varying
// otherwise.
func configDiffs(before, after []*Run) (changed, varying []Diff) {
	last, first := before[len(before)-1], after[0]
	keys := map[string]bool{}
	for k := range last.Facts {
		keys[k] = true
	}
	for k := range first.Facts {
		keys[k] = true
	}
	steady := func(runs []*Run, k, v string) bool {
		for _, r := range runs {
			if r.Facts[k] != v {
				return false
			}
		}
		return true
	}
	for _, k := range sortedKeys(keys) {
		vb, va := last.Facts[k], first.Facts[k]
		if vb == va {
			continue
		}
		d := Diff{Key: k, Before: vb, After: va}
		b := before[max(0, len(before)-diffWindow):]
		a := after[:min(len(after), diffWindow)]
		if steady(b, k, vb) && steady(a, k, va) {
			changed = append(changed, d)
		} else {
			varying = append(varying, d)
		}
	}
	return changed, varying
}

// interval is the mean of x with a Student-t confidence interval, the variance of one run the
// larger of x's spread and the mean of se² over the runs that have it (se NaN: not recorded).
func interval(x, se []float64, conf float64) Interval {
	n := len(x)
	iv := Interval{Runs: n}
	if n == 0 {
		return iv
	}
	sum := 0.0
	for _, v := range x {
		sum += v
	}
	iv.Mean = sum / float64(n)
	iv.Lo, iv.Hi = iv.Mean, iv.Mean
	within, have := 0.0, 0
	for _, s := range se {
		if !math.IsNaN(s) {
			within += s * s
			have++
		}
	}
	if have > 0 {
		within /= float64(have)
		iv.WithinSE = math.Sqrt(within)
	}
	if n < 2 && have == 0 {
		return iv
	}
	spread := 0.0
	if n >= 2 {
		ss := 0.0
		for _, v := range x {
			ss += (v - iv.Mean) * (v - iv.Mean)
		}
		spread = ss / float64(n-1)
	}
	iv.v = math.Max(spread, within) / float64(n)
	half := tQuantile(1-(1-conf)/2, max(1, n-1)) * math.Sqrt(iv.v)
	iv.Lo, iv.Hi = iv.Mean-half, iv.Mean+half
	return iv
}

// tQuantile is Student's t quantile at probability p with df degrees of freedom, by the
// Cornish–Fisher expansion around the normal quantile (Abramowitz & Stegun 26.7.5; within 1%
// from 3 degrees of freedom, 4% at 2); one degree of freedom is exact (Cauchy).
func tQuantile(p float64, df int) float64 {
	if df == 1 {
		return math.Tan(math.Pi * (p - 0.5))
	}
	z := math.Sqrt2 * math.Erfinv(2*p-1)
	v := float64(df)
	z2 := z * z
	g1 := (z2 + 1) * z / 4
	g2 := ((5*z2+16)*z2 + 3) * z / 96
	g3 := (((3*z2+19)*z2+17)*z2 - 15) * z / 384
	g4 := ((((79*z2+776)*z2+1482)*z2-1920)*z2 - 945) * z / 92160
	return z + g1/v + g2/(v*v) + g3/(v*v*v) + g4/(v*v*v*v)
}

// ParseSince parses --since: an RFC 3339 time, a date (2006-01-02, UTC), or an age such as
// 36h, 90m or 7d counted back from now.
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t.UTC(), nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.ParseFloat(days, 64); err == nil && n >= 0 && n < 1e5 {
			return now.Add(-time.Duration(n * 24 * float64(time.Hour))).UTC(), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("--since %s: give a time (2026-11-30T02:00:00Z), a date (2026-11-30) or an age (36h, 7d)", quote(s))
}
