package workloads

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func gapsCV(ts []time.Duration) (mean, cv float64) {
	var gaps []float64
	for i := 1; i < len(ts); i++ {
		gaps = append(gaps, (ts[i] - ts[i-1]).Seconds())
	}
	var sum, ss float64
	for _, g := range gaps {
		sum += g
	}
	mean = sum / float64(len(gaps))
	for _, g := range gaps {
		ss += (g - mean) * (g - mean)
	}
	return mean, math.Sqrt(ss/float64(len(gaps))) / mean
}

func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.4f, want %.4f ± %.4f", what, got, want, tol)
	}
}

func TestArrivalRatesAndBurstiness(t *testing.T) {
	const D = 2000 * time.Second
	cases := []struct {
		spec   ArrivalSpec
		wantCV float64
		cvTol  float64
	}{
		{ArrivalSpec{Process: Constant, Rate: 5}, 0, 1e-3},
		{ArrivalSpec{Process: Poisson, Rate: 5}, 1, 0.05},
		{ArrivalSpec{Process: Gamma, Rate: 5, CV: 0.5}, 0.5, 0.03},
		{ArrivalSpec{Process: Gamma, Rate: 5, CV: 2}, 2, 0.15},
		{ArrivalSpec{Process: Gamma, Rate: 5, CV: 4}, 4, 0.5},
	}
	for _, c := range cases {
		ts, err := Arrivals(c.spec, D, 42)
		if err != nil {
			t.Fatal(err)
		}
		// 10000 expected arrivals; for a renewal process the count's sd is about cv·sqrt(n).
		n := float64(len(ts))
		within(t, c.spec.Process+" count", n, 10000, 4*math.Max(c.wantCV, 0.01)*100+1)
		mean, cv := gapsCV(ts)
		within(t, c.spec.Process+" mean gap", mean, 0.2, 0.2*4*math.Max(c.wantCV, 0.01)/100+1e-6)
		within(t, c.spec.Process+" cv", cv, c.wantCV, c.cvTol)
		for i, at := range ts {
			if at < 0 || at >= D || (i > 0 && at < ts[i-1]) || at%time.Microsecond != 0 {
				t.Fatalf("%s: bad arrival %d = %v", c.spec.Process, i, at)
			}
		}
	}
}

func TestArrivalsArePure(t *testing.T) {
	s := ArrivalSpec{Process: Gamma, Rate: 3, CV: 1.7}
	a, _ := Arrivals(s, time.Minute, 7)
	b, _ := Arrivals(s, time.Minute, 7)
	c, _ := Arrivals(s, time.Minute, 8)
	if !reflect.DeepEqual(a, b) || reflect.DeepEqual(a, c) {
		t.Fatal("arrivals are not a pure function of the seed")
	}
	// A longer duration extends the same schedule.
	long, _ := Arrivals(s, 2*time.Minute, 7)
	if !reflect.DeepEqual(long[:len(a)], a) {
		t.Fatal("a longer duration changed the earlier arrivals")
	}
	// Constant spacing is exact.
	k, _ := Arrivals(ArrivalSpec{Process: Constant, Rate: 4}, 2*time.Second, 1)
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second,
		1250 * time.Millisecond, 1500 * time.Millisecond, 1750 * time.Millisecond}
	if !reflect.DeepEqual(k, want) {
		t.Fatalf("constant: %v", k)
	}
}

func TestModulatedArrivals(t *testing.T) {
	// on/off: 2 s on, 8 s off, mean rate 10/s -> 50/s while on, nothing while off.
	ts, err := Arrivals(ArrivalSpec{Process: OnOff, Rate: 10, OnS: 2, OffS: 8}, 1000*time.Second, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range ts {
		if ph := math.Mod(at.Seconds(), 10); ph > 2+1e-6 {
			t.Fatalf("arrival at %v falls in an off phase", at)
		}
	}
	within(t, "onoff count", float64(len(ts)), 10000, 400)

	// ramp 2 -> 18 over 1000 s: 2000+... total mean 10/s; first half gets (2+10)/2·500 = 3000,
	// second half (10+18)/2·500 = 7000.
	ts, _ = Arrivals(ArrivalSpec{Process: Ramp, Rate: 2, RateEnd: 18}, 1000*time.Second, 4)
	first := 0
	for _, at := range ts {
		if at < 500*time.Second {
			first++
		}
	}
	within(t, "ramp first half", float64(first), 3000, 220)
	within(t, "ramp second half", float64(len(ts)-first), 7000, 340)
	// ramp down to zero still works.
	if ts, err := Arrivals(ArrivalSpec{Process: Ramp, Rate: 10, RateEnd: 0}, 100*time.Second, 4); err != nil || len(ts) < 400 || len(ts) > 600 {
		t.Fatalf("ramp down: %d arrivals, %v", len(ts), err)
	}

	// diurnal, one period of 1000 s, amplitude 0.8, mean 10/s: the rate is 2/s at the ends and
	// 18/s in the middle. Count [0,100) vs [450,550): ∫ 10(1-0.8cos) over each window.
	ts, _ = Arrivals(ArrivalSpec{Process: Diurnal, Rate: 10, Amplitude: 0.8}, 1000*time.Second, 5)
	w := 2 * math.Pi / 1000
	lam := func(t float64) float64 { return 10 * (t - 0.8/w*math.Sin(w*t)) }
	var trough, peak int
	for _, at := range ts {
		s := at.Seconds()
		if s < 100 {
			trough++
		}
		if s >= 450 && s < 550 {
			peak++
		}
	}
	within(t, "diurnal trough", float64(trough), lam(100), 4*math.Sqrt(lam(100)))
	within(t, "diurnal peak", float64(peak), lam(550)-lam(450), 4*math.Sqrt(lam(550)-lam(450)))
	within(t, "diurnal total", float64(len(ts)), 10000, 400)
}

func TestArrivalErrors(t *testing.T) {
	bad := []ArrivalSpec{
		{Process: "", Rate: 1},
		{Process: "burst", Rate: 1},
		{Process: Poisson, Rate: 0},
		{Process: Poisson, Rate: math.Inf(1)},
		{Process: Gamma, Rate: 1},
		{Process: OnOff, Rate: 1},
		{Process: Ramp},
		{Process: Diurnal, Rate: 1, Amplitude: 1.5},
	}
	for _, s := range bad {
		if _, err := Arrivals(s, time.Second, 1); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if _, err := Arrivals(ArrivalSpec{Process: Poisson, Rate: 1}, 0, 1); err == nil {
		t.Error("zero duration accepted")
	}
	if _, err := Arrivals(ArrivalSpec{Process: Constant, Rate: 1e9}, time.Hour, 1); err == nil {
		t.Error("runaway trace accepted")
	}
}
