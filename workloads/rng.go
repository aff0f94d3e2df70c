package workloads

import (
	"math"
	"math/rand/v2"

	"github.com/llmbench/llmbench/tokenizer"
)

// rng draws numbers from a PCG stream. Only the PCG bit stream (a specified algorithm) comes
// from the standard library; every derived variate is computed here, so generated traces stay
// byte-identical across Go releases for a given seed.
type rng struct{ src *rand.PCG }

// newRNG returns the stream (seed, stream); distinct streams are independent.
func newRNG(seed int64, stream uint64) *rng {
	return &rng{src: rand.NewPCG(tokenizer.Mix(uint64(seed)), tokenizer.Mix(stream^0x6c6c6d62656e6368))}
}

// float returns a uniform number in (0, 1).
func (r *rng) float() float64 {
	return (float64(r.src.Uint64()>>11) + 0.5) / (1 << 53)
}

// norm returns a standard normal variate (Box–Muller).
func (r *rng) norm() float64 {
	u1, u2 := r.float(), r.float()
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// exp returns an exponential variate with mean 1.
func (r *rng) exp() float64 { return -math.Log(r.float()) }

// gamma returns a Gamma(shape k, scale 1) variate (Marsaglia and Tsang's method, with the
// U^(1/k) boost for k < 1).
func (r *rng) gamma(k float64) float64 {
	if k < 1 {
		return r.gamma(k+1) * math.Pow(r.float(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.norm()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.float()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// intn returns a uniform integer in [0, n).
func (r *rng) intn(n int) int { return int(r.float() * float64(n)) }

// phi is the standard normal CDF.
func phi(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
