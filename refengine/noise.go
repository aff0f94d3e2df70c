package refengine

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/tokenizer"
)

// Noise makes the engine's step times vary the way a real GPU server's do, so that two runs of
// the same trace differ as real runs differ (see the package doc, "Noise"). The zero value adds
// no noise: the engine is then exactly its roofline model, and Simulate is deterministic.
//
// Every draw comes from Seed (0: the engine's Config.Seed), the pool and the step's number, or
// for the drift from the simulated time, so a simulation with the same trace, Config and seed
// gives the same times.
type Noise struct {
	// Jitter is the relative standard deviation of one step's time (0.02: 2%). Each step's
	// priced time is multiplied by an independent lognormal factor of mean 1.
	Jitter float64
	// Drift is the relative standard deviation of a slow multiplicative drift of every step's
	// time (thermal state, clocks, neighbours), a smooth random curve through independent
	// normal knots DriftPeriod apart in simulated time (default 20s). Its value at the start
	// of a run is itself random, so whole runs differ in level.
	Drift       float64
	DriftPeriod time.Duration
	// Pause is the probability that a step is followed by a pause of PauseFor (default 20ms)
	// during which nothing runs: a host hiccup, a garbage collection, a preempted CPU thread.
	Pause    float64
	PauseFor time.Duration
	// Seed seeds the draws; 0 uses Config.Seed.
	Seed uint64
}

// NoisePresets are the named specs ParseNoise accepts besides key=value lists.
var NoisePresets = map[string]string{
	// realistic is the run-to-run and step-to-step variation of a dedicated GPU server as
	// benchmarks see it: a few percent per step, a couple of percent of slow drift, and a
	// rare 20 ms hiccup.
	"realistic": "jitter=3%,drift=2%:20s,pause=0.2%:20ms",
	"off":       "",
}

// Enabled reports whether n changes any step time.
func (n Noise) Enabled() bool { return n.Jitter > 0 || n.Drift > 0 || n.Pause > 0 }

// ParseNoise parses a noise spec: a preset ("realistic", "off") or comma-separated items
// jitter=P, drift=P[:PERIOD], pause=P[:DURATION], seed=N, where P is a fraction such as 0.02
// or a percentage such as 2%. An empty spec is no noise.
func ParseNoise(spec string) (Noise, error) {
	spec = strings.TrimSpace(spec)
	if p, ok := NoisePresets[strings.ToLower(spec)]; ok {
		spec = p
	}
	var n Noise
	if spec == "" {
		return n, nil
	}
	seen := map[string]bool{}
	for i, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		key, val, ok := strings.Cut(item, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		if item == "" || !ok {
			return Noise{}, fmt.Errorf("engine noise: item %d %s: want key=value with key jitter, drift, pause or seed, or a preset (realistic, off)", i+1, safetext.Quote(item, 24))
		}
		if seen[key] {
			return Noise{}, fmt.Errorf("engine noise: %s is given twice", safetext.Quote(key, 24))
		}
		seen[key] = true
		switch key {
		case "seed":
			s, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return Noise{}, fmt.Errorf("engine noise: seed=%s: want a non-negative integer", safetext.Quote(val, 24))
			}
			n.Seed = s
		case "jitter", "drift", "pause":
			ps, ds, hasDur := strings.Cut(val, ":")
			p, err := parseFraction(ps)
			if err != nil {
				return Noise{}, fmt.Errorf("engine noise: %s=%s: %v", key, safetext.Quote(val, 24), err)
			}
			var d time.Duration
			if hasDur {
				if key == "jitter" {
					return Noise{}, fmt.Errorf("engine noise: jitter=%s takes no duration (drift=P:PERIOD and pause=P:DURATION do)", safetext.Quote(val, 24))
				}
				d, err = time.ParseDuration(strings.TrimSpace(ds))
				if err != nil || d <= 0 {
					return Noise{}, fmt.Errorf("engine noise: %s=%s: the duration after ':' must be positive, like 20ms", key, safetext.Quote(val, 24))
				}
			}
			if p == 0 {
				d = 0 // a share of 0 is off: its duration means nothing (and String leaves it out)
			}
			switch key {
			case "jitter":
				n.Jitter = p
			case "drift":
				n.Drift, n.DriftPeriod = p, d
			case "pause":
				n.Pause, n.PauseFor = p, d
			}
		default:
			return Noise{}, fmt.Errorf("engine noise: unknown key %s in %s; keys: jitter, drift, pause, seed; presets: realistic, off", safetext.Quote(key, 24), safetext.Quote(item, 24))
		}
	}
	return n, n.validate()
}

// parseFraction reads "0.02" or "2%" as 0.02, which must be in [0, 1].
func parseFraction(s string) (float64, error) {
	s = strings.TrimSpace(s)
	scale := 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		s, scale = strings.TrimSpace(t), 0.01
	}
	v, err := strconv.ParseFloat(s, 64)
	v *= scale
	if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
		return 0, fmt.Errorf("want a fraction in [0, 1] such as 0.02 or 2%%")
	}
	return v, nil
}

func (n Noise) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"Jitter", n.Jitter}, {"Drift", n.Drift}, {"Pause", n.Pause}} {
		if f.v < 0 || f.v > 1 || math.IsNaN(f.v) {
			return fmt.Errorf("refengine: Noise.%s %g: must be in [0, 1]", f.name, f.v)
		}
	}
	if n.DriftPeriod < 0 || n.PauseFor < 0 {
		return fmt.Errorf("refengine: Noise.DriftPeriod and Noise.PauseFor must be >= 0 (0: the default)")
	}
	return nil
}

// withDefaults fills DriftPeriod and PauseFor.
func (n Noise) withDefaults() Noise {
	if n.DriftPeriod == 0 {
		n.DriftPeriod = 20 * time.Second
	}
	if n.PauseFor == 0 {
		n.PauseFor = 20 * time.Millisecond
	}
	return n
}

// String returns the spec that ParseNoise turns back into n, with fractions as decimals (""
// for no noise).
func (n Noise) String() string {
	if !n.Enabled() && n.Seed == 0 {
		return ""
	}
	pct := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	var parts []string
	if n.Jitter > 0 {
		parts = append(parts, "jitter="+pct(n.Jitter))
	}
	if n.Drift > 0 {
		s := "drift=" + pct(n.Drift)
		if n.DriftPeriod > 0 {
			s += ":" + n.DriftPeriod.String()
		}
		parts = append(parts, s)
	}
	if n.Pause > 0 {
		s := "pause=" + pct(n.Pause)
		if n.PauseFor > 0 {
			s += ":" + n.PauseFor.String()
		}
		parts = append(parts, s)
	}
	if n.Seed != 0 {
		parts = append(parts, "seed="+strconv.FormatUint(n.Seed, 10))
	}
	return strings.Join(parts, ",")
}

// noiser applies a Noise to priced step times. A nil *noiser adds nothing.
type noiser struct {
	n    Noise
	seed uint64
}

// newNoiser returns nil when n adds no noise; engineSeed seeds it unless n.Seed is set.
func newNoiser(n Noise, engineSeed uint64) *noiser {
	if !n.Enabled() {
		return nil
	}
	seed := n.Seed
	if seed == 0 {
		seed = engineSeed
	}
	return &noiser{n: n.withDefaults(), seed: tokenizer.Mix(seed ^ 0x6e6f697365)}
}

// step returns the duration of step number k of pool p, priced d, starting at simulated time at.
func (z *noiser) step(p int, k int64, at, d time.Duration) time.Duration {
	if z == nil {
		return d
	}
	f := 1.0
	if j := z.n.Jitter; j > 0 {
		f *= math.Exp(j*z.normal(1, uint64(p), uint64(k)) - j*j/2)
	}
	if z.n.Drift > 0 {
		f *= math.Exp(z.n.Drift * z.drift(at))
	}
	out := time.Duration(float64(d) * f)
	if z.n.Pause > 0 && z.uniform(3, uint64(p), uint64(k)) < z.n.Pause {
		out += z.n.PauseFor
	}
	return max(out, time.Nanosecond)
}

// drift is a smooth curve of standard normal knots every DriftPeriod (smoothstep between them).
func (z *noiser) drift(at time.Duration) float64 {
	x := float64(max(at, 0)) / float64(z.n.DriftPeriod)
	k := math.Floor(x)
	t := x - k
	t = t * t * (3 - 2*t)
	a, b := z.normal(2, uint64(k), 0), z.normal(2, uint64(k)+1, 0)
	return a + (b-a)*t
}

// uniform is a draw in [0, 1) keyed by (kind, a, b).
func (z *noiser) uniform(kind, a, b uint64) float64 {
	h := tokenizer.Mix(z.seed ^ tokenizer.Mix(kind<<56^a<<40^tokenizer.Mix(b)))
	return float64(h>>11) / (1 << 53)
}

// normal is a standard normal draw keyed by (kind, a, b) (Box–Muller).
func (z *noiser) normal(kind, a, b uint64) float64 {
	u1 := z.uniform(kind, a, b)
	u2 := z.uniform(kind|0x80, a, b)
	return math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
}
