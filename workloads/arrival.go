package workloads

import (
	"fmt"
	"math"
	"time"
)

// Arrival processes.
const (
	Constant = "constant" // evenly spaced at Rate
	Poisson  = "poisson"  // exponential gaps at Rate (CV 1)
	Gamma    = "gamma"    // Gamma-distributed gaps at Rate with coefficient of variation CV
	OnOff    = "onoff"    // bursts: arrivals only during On seconds of every On+Off cycle
	Ramp     = "ramp"     // rate changes linearly from Rate to RateEnd over the duration
	Diurnal  = "diurnal"  // rate follows a cosine day curve between Rate(1-A) and Rate(1+A)
)

// ArrivalProcesses lists the arrival processes.
var ArrivalProcesses = []string{Constant, Poisson, Gamma, OnOff, Ramp, Diurnal}

// ArrivalSpec describes when requests (or, for session classes, sessions) start.
//
// Every process is a renewal process with mean-1 gaps (constant: gaps of exactly 1; poisson:
// exponential; gamma: Gamma with coefficient of variation CV) laid out in "operational time"
// and mapped to wall time through the cumulative rate Λ(t) = ∫ r(s) ds, so the n-th arrival is
// at Λ⁻¹(S_n). onoff, ramp and diurnal modulate the rate r(t); their gaps are Gamma with CV
// when CV is set, and exponential (CV 1) otherwise.
type ArrivalSpec struct {
	Process string `json:"process"`
	// Rate is the mean rate in arrivals per second (ramp: the rate at the start).
	Rate float64 `json:"rate"`
	// CV is the coefficient of variation of the gaps (gamma, and the modulated processes).
	CV float64 `json:"cv,omitempty"`
	// RateEnd is the ramp's rate at the end of the duration.
	RateEnd float64 `json:"rate_end,omitempty"`
	// OnS and OffS are the onoff phase lengths in seconds; during On the rate is
	// Rate × (On+Off)/On so that the mean stays Rate. A cycle starts with its On phase.
	OnS  float64 `json:"on_s,omitempty"`
	OffS float64 `json:"off_s,omitempty"`
	// PeriodS is the diurnal period in seconds (default: the whole duration, one day-curve);
	// Amplitude in [0, 1] is the relative swing (default 0.5). The curve starts at its trough.
	PeriodS   float64 `json:"period_s,omitempty"`
	Amplitude float64 `json:"amplitude,omitempty"`
}

// maxArrivals bounds one generated trace.
const maxArrivals = 10_000_000

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func (a ArrivalSpec) check() error {
	bad := func(msg string) error { return fmt.Errorf("arrival %s: %s", a.Process, msg) }
	if !(a.Rate >= 0) || !finite(a.Rate) {
		return bad("rate must be a finite number >= 0")
	}
	if a.Process != Ramp && !(a.Rate > 0) {
		return bad("rate must be > 0 requests/s (set --rate)")
	}
	if !(a.CV >= 0) || !finite(a.CV) {
		return bad("cv must be a finite number >= 0")
	}
	switch a.Process {
	case Constant, Poisson:
	case Gamma:
		if !(a.CV > 0) {
			return bad("gamma needs cv > 0 (1 is Poisson, above 1 is bursty; set --cv)")
		}
	case OnOff:
		if !(a.OnS >= 1e-6) || !(a.OffS >= 0) || !finite(a.OnS) || !finite(a.OffS) {
			return bad("onoff needs on_s >= 1µs and off_s >= 0 (set --on and --off)")
		}
	case Ramp:
		if !(a.RateEnd >= 0) || !finite(a.RateEnd) || (a.Rate == 0 && a.RateEnd == 0) {
			return bad("ramp needs rate and rate_end >= 0, not both 0 (set --rate and --rate-end)")
		}
	case Diurnal:
		if !(a.Amplitude >= 0 && a.Amplitude <= 1) || !(a.PeriodS >= 0) || !finite(a.PeriodS) {
			return bad("diurnal needs amplitude in [0, 1] and period_s >= 0")
		}
	case "":
		return fmt.Errorf("arrival: missing process (one of %v)", ArrivalProcesses)
	default:
		return fmt.Errorf("arrival: unknown process %q (one of %v)", a.Process, ArrivalProcesses)
	}
	return nil
}

// Arrivals returns the arrival offsets in [0, duration), ascending, rounded to the microsecond:
// a pure function of the spec, the duration and the seed.
func Arrivals(a ArrivalSpec, duration time.Duration, seed int64) ([]time.Duration, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	if duration <= 0 {
		return nil, fmt.Errorf("arrivals: duration must be > 0 (got %v)", duration)
	}
	D := duration.Seconds()
	mean := a.Rate
	if a.Process == Ramp {
		mean = (a.Rate + a.RateEnd) / 2
	}
	if mean*D > maxArrivals {
		return nil, fmt.Errorf("arrivals: %.0f requests/s for %v would be about %.3g requests, more than %d; lower the rate or the duration", mean, duration, mean*D, maxArrivals)
	}
	if a.Process == Diurnal {
		if a.PeriodS == 0 {
			a.PeriodS = D
		}
		if a.Amplitude == 0 {
			a.Amplitude = 0.5
		}
	}
	cv := a.CV
	switch a.Process {
	case Constant:
		cv = 0
	case Poisson:
		cv = 1
	case OnOff, Ramp, Diurnal:
		if cv == 0 {
			cv = 1
		}
	}
	r := newRNG(seed, 1)
	gap := func() float64 {
		switch {
		case cv == 0:
			return 1
		case cv == 1:
			return r.exp()
		default:
			k := 1 / (cv * cv)
			return r.gamma(k) / k
		}
	}
	inv := inverseIntensity(a, D)
	var out []time.Duration
	var s float64
	for {
		s += gap()
		t, ok := inv(s)
		if !ok || t >= D {
			break
		}
		if len(out) == maxArrivals {
			return nil, fmt.Errorf("arrivals: more than %d requests; lower the rate or the duration", maxArrivals)
		}
		out = append(out, time.Duration(math.Round(t*1e6))*time.Microsecond)
	}
	return out, nil
}

// inverseIntensity returns Λ⁻¹ for the process: the time t (seconds) at which the cumulative
// rate reaches s, or false when it never does.
func inverseIntensity(a ArrivalSpec, D float64) func(s float64) (float64, bool) {
	switch a.Process {
	case OnOff:
		cycle := a.OnS + a.OffS
		peak := a.Rate * cycle / a.OnS
		perCycle := peak * a.OnS
		return func(s float64) (float64, bool) {
			k := math.Floor(s / perCycle)
			rem := s - k*perCycle
			return k*cycle + rem/peak, true
		}
	case Ramp:
		r0, r1 := a.Rate, a.RateEnd
		slope := (r1 - r0) / D // Λ(t) = r0 t + slope t²/2
		return func(s float64) (float64, bool) {
			if math.Abs(slope) < 1e-12*math.Max(r0, r1)/D {
				return s / r0, r0 > 0
			}
			disc := r0*r0 + 2*slope*s
			if disc < 0 {
				return 0, false
			}
			return 2 * s / (r0 + math.Sqrt(disc)), true // the stable root of slope t²/2 + r0 t - s = 0
		}
	case Diurnal:
		A, P, R := a.Amplitude, a.PeriodS, a.Rate
		w := 2 * math.Pi / P
		lambda := func(t float64) float64 { return R * (t - A/w*math.Sin(w*t)) }
		return func(s float64) (float64, bool) {
			lo := s / (R * (1 + A))
			hi := lo
			for lambda(hi) < s {
				hi = 2*hi + P
			}
			for i := 0; i < 100 && hi-lo > 1e-9; i++ {
				mid := (lo + hi) / 2
				if lambda(mid) < s {
					lo = mid
				} else {
					hi = mid
				}
			}
			return hi, true
		}
	default:
		return func(s float64) (float64, bool) { return s / a.Rate, true }
	}
}
