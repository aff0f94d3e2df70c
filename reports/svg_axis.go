package reports

import (
	"math"
	"strconv"
	"strings"
)

// svgAxis maps data values to pixels along one axis of an SVG chart (see svg.go): a linear or
// log value axis, or a category axis with one band per category.
type svgAxis struct {
	// lo and hi bound the axis in data units (for a log axis, powers of ten).
	lo, hi float64
	log    bool
	// cats makes a category axis: category i sits at the middle of band i.
	cats []string
	// p0 and p1 are the pixels where lo (or the first band) and hi (or the last band) lie.
	p0, p1 float64
	// ticks are the values that get a label and a grid line; dec is their decimals.
	ticks []float64
	dec   int
}

// at is the pixel of v, false when v cannot be shown (not finite, or not positive on a log axis).
func (a *svgAxis) at(v float64) (float64, bool) {
	if !finite(v) {
		return 0, false
	}
	if a.cats != nil {
		return a.p0 + (v+0.5)*a.band(), true
	}
	lo, hi := a.lo, a.hi
	if a.log {
		if v <= 0 {
			return 0, false
		}
		v, lo, hi = math.Log10(v), math.Log10(lo), math.Log10(hi)
	}
	if hi == lo {
		return a.p0, true
	}
	return a.p0 + (v-lo)/(hi-lo)*(a.p1-a.p0), true
}

// band is the signed width of one category's band (0 on a value axis).
func (a *svgAxis) band() float64 {
	if len(a.cats) == 0 {
		return 0
	}
	return (a.p1 - a.p0) / float64(len(a.cats))
}

// base is where bars start: 0 when it is on the axis, else the end of the axis nearest to it.
func (a *svgAxis) base() float64 {
	switch {
	case a.log || a.lo > 0:
		return a.p0
	case a.hi < 0:
		return a.p1
	}
	p, _ := a.at(0)
	return p
}

// labels are the tick labels, in tick order (category names on a category axis).
func (a *svgAxis) labels() []string {
	if a.cats != nil {
		return a.cats
	}
	out := make([]string, len(a.ticks))
	for i, t := range a.ticks {
		out[i] = tickLabel(t, a.dec)
	}
	return out
}

// tickPos are the pixels of the ticks (the band middles on a category axis).
func (a *svgAxis) tickPos() []float64 {
	if a.cats != nil {
		out := make([]float64, len(a.cats))
		for i := range a.cats {
			out[i], _ = a.at(float64(i))
		}
		return out
	}
	out := make([]float64, 0, len(a.ticks))
	for _, t := range a.ticks {
		if p, ok := a.at(t); ok {
			out = append(out, p)
		}
	}
	return out
}

// axisLimits says how a value axis is fitted to its data: zero included (a y axis, as
// ECharts draws one unless told to scale), a fixed maximum, or ending at the largest value.
type axisLimits struct {
	zero    bool
	max     float64
	fixed   bool // max is set
	dataMax bool // end at the largest value rather than the next round number
}

// limitsOf reads a chartSpec's max (nil, a number, or "dataMax").
func limitsOf(zero bool, maxV any) axisLimits {
	l := axisLimits{zero: zero}
	switch m := maxV.(type) {
	case int:
		l.max, l.fixed = float64(m), true
	case float64:
		l.max, l.fixed = m, finite(m)
	case string:
		l.dataMax = m == "dataMax"
	}
	return l
}

// valueAxis fits a linear axis with round ticks (four to eight) to vals, or a log axis with a
// tick per power of ten. With no drawable value it spans 0 to 1 (1 to 10 on a log axis).
func valueAxis(vals []float64, log bool, l axisLimits) svgAxis {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if finite(v) && (!log || v > 0) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if log {
		return logAxis(lo, hi)
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	if l.zero {
		lo, hi = min(lo, 0), max(hi, 0)
	}
	if l.fixed && l.max > lo {
		hi = l.max
	}
	if hi == lo {
		hi = lo + 1
	}
	step := niceStep(lo, hi)
	a := svgAxis{lo: math.Floor(lo/step+1e-9) * step, hi: hi}
	if !l.fixed && !l.dataMax {
		a.hi = math.Ceil(hi/step-1e-9) * step
	}
	for i := 0; ; i++ {
		t := a.lo + float64(i)*step
		if t > a.hi+step*1e-6 || i > 50 {
			break
		}
		a.ticks = append(a.ticks, math.Round(t/step)*step)
	}
	a.dec = max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	return a
}

// logAxis spans whole powers of ten around lo..hi, with at most about eight labelled ticks.
func logAxis(lo, hi float64) svgAxis {
	if lo > hi {
		lo, hi = 1, 10
	}
	e0, e1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if e1 <= e0 {
		e1 = e0 + 1
	}
	a := svgAxis{lo: math.Pow(10, e0), hi: math.Pow(10, e1), log: true}
	every := math.Ceil((e1 - e0 + 1) / 8)
	for e := e0; e <= e1; e += every {
		a.ticks = append(a.ticks, math.Pow(10, e))
	}
	a.dec = max(0, int(-e0))
	return a
}

// niceStep is the smallest step of 1, 2 or 5 times a power of ten that cuts lo..hi into at
// most seven intervals between round values.
func niceStep(lo, hi float64) float64 {
	span := hi - lo
	if !(span > 0) || !finite(span) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(span))-2)
	for _, m := range [...]float64{1, 2, 5, 10, 20, 50, 100, 200, 500} {
		if s := m * e; math.Ceil(hi/s-1e-9)-math.Floor(lo/s+1e-9) <= 7 {
			return s
		}
	}
	return 1000 * e
}

// tickLabel writes a tick value short: 12k and 3M for round thousands and millions, else the
// value with at most dec decimals (no trailing zeros) and thousands separators.
func tickLabel(v float64, dec int) string {
	if v == 0 {
		v = 0 // not -0
	}
	av := math.Abs(v)
	switch {
	case av >= 1e6 && math.Mod(av, 1e5) == 0:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case av >= 1e4 && math.Mod(av, 100) == 0:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	s := strconv.FormatFloat(v, 'f', min(dec, 6), 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return groupDigits(s)
}
