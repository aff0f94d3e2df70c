package metrics

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Energy per token (issue 39): the GPUs' energy over a run's measured window, from power
// readings the server side exports (DCGM's counters and gauges, scraped by runner), and what
// it costs per request and per token. Unknown power stays unknown: every figure is null, never
// zero, and Note says why.

// Energy methods, as Energy.Method names them.
const (
	EnergyByCounter = "energy counter"            // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION deltas
	EnergyByPower   = "power samples (trapezoid)" // DCGM_FI_DEV_POWER_USAGE integrated over the scrape times
	EnergyMixed     = "energy counter where exported, else power samples"
)

// PowerPoint is one scrape of one GPU: T in seconds from the run epoch, its power (W) and its
// cumulative energy counter (mJ); either is negative when not exported.
type PowerPoint struct {
	T, PowerW, EnergyMJ float64
}

// PowerSeries is one GPU's scrapes in time order; Key names it (exporter and GPU).
type PowerSeries struct {
	Key    string
	Points []PowerPoint
}

// EnergyOptions are what EnergyOver needs besides the readings.
type EnergyOptions struct {
	// StartS and EndS are the measured window (seconds from the run epoch).
	StartS, EndS float64
	// RequestsPerS and OutputTokensPerS are the run's throughput over that window.
	RequestsPerS, OutputTokensPerS float64
	// PricePerKWh, when > 0, prices the energy in Currency.
	PricePerKWh float64
	Currency    string
	// Sources name the exporters read, for the report.
	Sources []string
}

// Energy is the GPUs' energy over the measured window.
type Energy struct {
	// Available is false when no reading covers the window; the figures are then null.
	Available bool     `json:"available"`
	Method    string   `json:"method,omitempty"`
	Sources   []string `json:"sources,omitempty"`
	// GPUs is the number of GPU series integrated.
	GPUs         int     `json:"gpus"`
	WindowStartS float64 `json:"window_start_s"`
	WindowEndS   float64 `json:"window_end_s"`
	// CoveredFraction is the share of the window the readings span (the figures are the
	// covered part's average power over the whole window).
	CoveredFraction float64 `json:"covered_fraction"`
	// Joules over the window, AvgPowerW the average power of all GPUs, JoulesPerRequest per
	// successful request, OutputTokensPerJoule output tokens of successful requests per joule.
	Joules               *float64 `json:"joules"`
	AvgPowerW            *float64 `json:"avg_power_w"`
	JoulesPerRequest     *float64 `json:"joules_per_request"`
	OutputTokensPerJoule *float64 `json:"output_tokens_per_joule"`
	// PricePerKWh, Cost and CostPerRequest: with --price-kwh, the energy's cost.
	PricePerKWh    float64  `json:"price_per_kwh,omitempty"`
	Currency       string   `json:"currency,omitempty"`
	Cost           *float64 `json:"cost,omitempty"`
	CostPerRequest *float64 `json:"cost_per_request,omitempty"`
	Note           string   `json:"note,omitempty"`
}

// UnknownEnergy is the Energy of a run whose power is unknown, with note saying why.
func UnknownEnergy(sources []string, note string) *Energy {
	return &Energy{Sources: sources, Note: note}
}

// EnergyOver integrates series over [o.StartS, o.EndS]. Per GPU it uses the energy counter
// where two scrapes of it exist (its value at the window's ends interpolated linearly between
// scrapes; a counter that goes back is a reset and counts from zero), else the power gauge
// integrated by the trapezoid rule over the scrape times within the window (the power at the
// window's ends interpolated). A GPU whose readings span only part of the window contributes
// its average power over the part it spans.
func EnergyOver(series []PowerSeries, o EnergyOptions) *Energy {
	e := &Energy{Sources: o.Sources, WindowStartS: o.StartS, WindowEndS: o.EndS, PricePerKWh: o.PricePerKWh, Currency: o.Currency}
	win := o.EndS - o.StartS
	if !(win > 0) {
		e.Note = "the measured window is empty"
		return e
	}
	var watts, covered float64
	var counters, gauges int
	var skipped []string
	for _, s := range series {
		w, cov, method := seriesPower(s.Points, o.StartS, o.EndS)
		switch method {
		case EnergyByCounter:
			counters++
		case EnergyByPower:
			gauges++
		default:
			skipped = append(skipped, s.Key)
			continue
		}
		watts += w
		covered += cov / win
	}
	n := counters + gauges
	if n == 0 {
		e.Note = "no GPU power reading spans the measured window (two scrapes of DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION or DCGM_FI_DEV_POWER_USAGE are needed)"
		return e
	}
	if len(skipped) > 0 {
		e.Note = fmt.Sprintf("%d of %d GPU series have no two readings in the window (%s); a partial sum would undercount", len(skipped), len(series), strings.Join(skipped, ", "))
		return e
	}
	if math.IsNaN(watts) || math.IsInf(watts, 0) || watts < 0 {
		e.Note = "the power readings are out of range"
		return e
	}
	e.fill(watts, win, o)
	e.GPUs, e.CoveredFraction = n, covered/float64(n)
	e.Method = EnergyMixed
	switch {
	case gauges == 0:
		e.Method = EnergyByCounter
	case counters == 0:
		e.Method = EnergyByPower
	}
	if e.CoveredFraction < 0.9 {
		e.Note = fmt.Sprintf("the readings span %.0f%% of the window: its average power stands for the rest", 100*e.CoveredFraction)
	}
	return e
}

// fill sets the figures from the average power watts over win seconds.
func (e *Energy) fill(watts, win float64, o EnergyOptions) {
	e.Available = true
	j := watts * win
	e.Joules, e.AvgPowerW = &j, &watts
	if o.RequestsPerS > 0 && watts > 0 {
		v := watts / o.RequestsPerS
		e.JoulesPerRequest = &v
	}
	if watts > 0 {
		v := o.OutputTokensPerS / watts
		e.OutputTokensPerJoule = &v
	}
	if o.PricePerKWh > 0 {
		c := j / 3.6e6 * o.PricePerKWh
		e.Cost = &c
		if e.JoulesPerRequest != nil {
			cr := *e.JoulesPerRequest / 3.6e6 * o.PricePerKWh
			e.CostPerRequest = &cr
		}
	}
}

// seriesPower is one GPU's average power over the part of [a, b] its readings span, that
// span's length, and the method used ("" when the readings cannot say).
func seriesPower(pts []PowerPoint, a, b float64) (watts, covered float64, method string) {
	pts = sortedPoints(pts)
	var cum []PowerPoint // T and the counter's increase since its first reading (J), in EnergyMJ
	total, prev := 0.0, 0.0
	for _, p := range pts {
		if p.EnergyMJ < 0 || math.IsInf(p.EnergyMJ, 0) || math.IsNaN(p.EnergyMJ) {
			continue
		}
		if len(cum) > 0 {
			if p.EnergyMJ >= prev {
				total += (p.EnergyMJ - prev) / 1000
			} else {
				total += p.EnergyMJ / 1000 // the counter went back (a reset): counted from zero
			}
		}
		prev = p.EnergyMJ
		cum = append(cum, PowerPoint{T: p.T, EnergyMJ: total})
	}
	if s, e, ok := span(cum, a, b); ok {
		j := interp(cum, e, func(p PowerPoint) float64 { return p.EnergyMJ }) - interp(cum, s, func(p PowerPoint) float64 { return p.EnergyMJ })
		return j / (e - s), e - s, EnergyByCounter
	}
	var gauge []PowerPoint
	for _, p := range pts {
		if p.PowerW >= 0 && !math.IsInf(p.PowerW, 0) && !math.IsNaN(p.PowerW) {
			gauge = append(gauge, p)
		}
	}
	s, e, ok := span(gauge, a, b)
	if !ok {
		return 0, 0, ""
	}
	return trapezoid(gauge, s, e) / (e - s), e - s, EnergyByPower
}

// sortedPoints drops readings at non-finite times and sorts the rest by time (stable).
func sortedPoints(pts []PowerPoint) []PowerPoint {
	out := make([]PowerPoint, 0, len(pts))
	for _, p := range pts {
		if !math.IsNaN(p.T) && !math.IsInf(p.T, 0) {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].T < out[j].T })
	return out
}

// span is the part of [a, b] that pts (two or more, in time order) cover.
func span(pts []PowerPoint, a, b float64) (s, e float64, ok bool) {
	if len(pts) < 2 {
		return 0, 0, false
	}
	s, e = max(a, pts[0].T), min(b, pts[len(pts)-1].T)
	return s, e, e > s
}

// interp is v linearly interpolated at t between the readings around it (t within pts' span).
func interp(pts []PowerPoint, t float64, v func(PowerPoint) float64) float64 {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].T >= t })
	if i == 0 {
		return v(pts[0])
	}
	if i == len(pts) {
		return v(pts[len(pts)-1])
	}
	p, q := pts[i-1], pts[i]
	if q.T == p.T {
		return v(q)
	}
	return v(p) + (v(q)-v(p))*(t-p.T)/(q.T-p.T)
}

// trapezoid integrates the piecewise-linear power through pts over [s, e] (joules).
func trapezoid(pts []PowerPoint, s, e float64) float64 {
	pw := func(p PowerPoint) float64 { return p.PowerW }
	xs := []float64{s}
	for _, p := range pts {
		if p.T > s && p.T < e {
			xs = append(xs, p.T)
		}
	}
	xs = append(xs, e)
	j := 0.0
	for k := 1; k < len(xs); k++ {
		j += (interp(pts, xs[k-1], pw) + interp(pts, xs[k], pw)) / 2 * (xs[k] - xs[k-1])
	}
	return j
}

// EnergyByModel is the method of a simulation's energy: the reference engine's power model.
const EnergyByModel = "reference engine power model, over the simulated makespan"

// ModelledEnergy is a simulated engine's energy: Joules over Seconds (its makespan) by GPUs.
type ModelledEnergy struct {
	Joules, Seconds float64
	GPUs            int
	Source          string // the GPU profile's power figures (perf.Power.Source)
}

// EnergyFromModel is the Energy of a simulation from its engine's modelled energy m over the
// makespan, per succeeded request and output token of sum (all of them, not only the steady
// window's: the energy covers the whole makespan).
func EnergyFromModel(m ModelledEnergy, sum *Summary) *Energy {
	e := &Energy{Method: EnergyByModel, GPUs: m.GPUs, WindowEndS: m.Seconds, Sources: []string{m.Source}}
	if !(m.Seconds > 0) || !(m.Joules > 0) || math.IsInf(m.Joules, 0) {
		e.Note = "the simulation has no makespan to integrate over"
		return e
	}
	e.Available, e.CoveredFraction = true, 1
	j, w := m.Joules, m.Joules/m.Seconds
	e.Joules, e.AvgPowerW = &j, &w
	if n := sum.Requests.Succeeded; n > 0 {
		v := j / float64(n)
		e.JoulesPerRequest = &v
	}
	v := float64(sum.Requests.OutputTokens) / j
	e.OutputTokensPerJoule = &v
	return e
}
