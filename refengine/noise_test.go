package refengine

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseNoise(t *testing.T) {
	for spec, want := range map[string]Noise{
		"":                                 {},
		"off":                              {},
		"jitter=2%":                        {Jitter: 0.02},
		"jitter=0.02,drift=1%:30s":         {Jitter: 0.02, Drift: 0.01, DriftPeriod: 30 * time.Second},
		"pause=0.5%:20ms,seed=7":           {Pause: 0.005, PauseFor: 20 * time.Millisecond, Seed: 7},
		" Realistic ":                      {Jitter: 0.03, Drift: 0.02, DriftPeriod: 20 * time.Second, Pause: 0.002, PauseFor: 20 * time.Millisecond},
		"drift=0.01, jitter=0.1 , pause=1": {Jitter: 0.1, Drift: 0.01, Pause: 1},
	} {
		got, err := ParseNoise(spec)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", spec, got, err, want)
		}
	}
	for spec, msg := range map[string]string{
		"jitter":              "key=value",
		"jitter=2":            "fraction in [0, 1]",
		"jitter=-1%":          "fraction in [0, 1]",
		"jitter=1%:5s":        "takes no duration",
		"pause=1%:-5ms":       "must be positive",
		"pause=1%:soon":       "must be positive",
		"wobble=1%":           "unknown key",
		"jitter=1%,jitter=2%": "twice",
		"jitter=1%,":          "item 2",
		"seed=x":              "non-negative integer",
		"jitter=NaN":          "fraction",
	} {
		if _, err := ParseNoise(spec); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want one containing %q", spec, err, msg)
		}
	}
	if _, err := Simulate(nil, Config{Noise: Noise{Jitter: 2}}); err == nil || !strings.Contains(err.Error(), "Noise.Jitter") {
		t.Errorf("Jitter 2 accepted by Config: %v", err)
	}
}

func FuzzParseNoise(f *testing.F) {
	for _, s := range []string{"", "realistic", "off", "jitter=2%,drift=1%,pause=0.5%:20ms", "drift=0.3:1m,seed=9", "=", ",", "pause=1:", "jitter=1e-300%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		n, err := ParseNoise(spec)
		if err != nil {
			if len(err.Error()) > 400 {
				t.Fatalf("error of %d bytes for a %d-byte spec", len(err.Error()), len(spec))
			}
			return
		}
		again, err := ParseNoise(n.String())
		if err != nil || again != n {
			t.Fatalf("%q parsed to %+v, whose String %q gives %+v, %v", spec, n, n.String(), again, err)
		}
	})
}

// noisyRun simulates a fixed trace with noise spec under seed and returns it.
func noisyRun(t *testing.T, spec string, seed uint64) *SimResult {
	t.Helper()
	n, err := ParseNoise(spec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Simulate(synthTrace(300, 10, 1000, 200), Config{Noise: n, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestNoiseSeededAndOffByDefault(t *testing.T) {
	plain, off := noisyRun(t, "", 1), noisyRun(t, "off", 5)
	if plain.Stats != off.Stats {
		t.Fatalf("noise off changed the simulation: %+v vs %+v", plain.Stats, off.Stats)
	}
	a, b := noisyRun(t, "realistic", 3), noisyRun(t, "realistic", 3)
	if a.Stats != b.Stats || a.Timelines[299].Finish != b.Timelines[299].Finish {
		t.Fatalf("the same seed gave different runs: %+v vs %+v", a.Stats, b.Stats)
	}
	c := noisyRun(t, "realistic", 4)
	if c.Stats.BusyTime == a.Stats.BusyTime {
		t.Fatalf("seeds 3 and 4 gave the same busy time %v", a.Stats.BusyTime)
	}
	if a.Stats.BusyTime == plain.Stats.BusyTime {
		t.Fatal("realistic noise left the busy time unchanged")
	}
	if a.Info.Noise != "jitter=0.03,drift=0.02:20s,pause=0.002:20ms" || plain.Info.Noise != "" {
		t.Fatalf("Info.Noise %q / %q", a.Info.Noise, plain.Info.Noise)
	}
}

// TestNoiseMagnitudes checks each component against its definition over many steps.
func TestNoiseMagnitudes(t *testing.T) {
	z := newNoiser(Noise{Jitter: 0.05, Seed: 1}, 0)
	const d = time.Millisecond
	var sum, sum2 float64
	const n = 20000
	for k := int64(0); k < n; k++ {
		r := float64(z.step(0, k, 0, d)) / float64(d)
		sum += r
		sum2 += r * r
	}
	mean := sum / n
	sd := math.Sqrt(sum2/n - mean*mean)
	if math.Abs(mean-1) > 0.003 || math.Abs(sd-0.05) > 0.003 {
		t.Errorf("jitter 5%%: mean factor %.4f, sd %.4f; want 1 and 0.05", mean, sd)
	}

	z = newNoiser(Noise{Pause: 0.01, PauseFor: 10 * time.Millisecond, Seed: 2}, 0)
	pauses := 0
	for k := int64(0); k < n; k++ {
		switch got := z.step(1, k, 0, d); got {
		case d:
		case d + 10*time.Millisecond:
			pauses++
		default:
			t.Fatalf("pause step %d took %v", k, got)
		}
	}
	// 1% of 20000 = 200; binomial sd 14: allow 5 sd.
	if pauses < 130 || pauses > 270 {
		t.Errorf("pause=1%%: %d of %d steps paused", pauses, n)
	}

	// Drift: smooth (two steps 1 ms apart differ by almost nothing), and its level varies
	// between seeds with about the stated spread.
	z = newNoiser(Noise{Drift: 0.1, Seed: 3}, 0)
	if a, b := z.step(0, 0, 5*time.Second, d), z.step(0, 1, 5*time.Second+time.Millisecond, d); math.Abs(float64(a-b)) > float64(d)/1000 {
		t.Errorf("drift jumps between neighbouring steps: %v vs %v", a, b)
	}
	var logs []float64
	for s := uint64(1); s <= 400; s++ {
		logs = append(logs, math.Log(float64(newNoiser(Noise{Drift: 0.1, Seed: s}, 0).step(0, 0, 0, d))/float64(d)))
	}
	var m, v float64
	for _, x := range logs {
		m += x
	}
	m /= float64(len(logs))
	for _, x := range logs {
		v += (x - m) * (x - m)
	}
	if sd := math.Sqrt(v / float64(len(logs)-1)); math.Abs(sd-0.1) > 0.015 || math.Abs(m) > 0.02 {
		t.Errorf("drift 10%%: run-level log factor mean %.4f sd %.4f over 400 seeds", m, sd)
	}
	if newNoiser(Noise{}, 9) != nil {
		t.Error("a zero Noise built a noiser")
	}
}
