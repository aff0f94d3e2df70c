package workloads

import (
	"errors"
	"fmt"
	"math"
)

// Controlled prefix-cache hit rate (issue 34). A class whose requests are a shared prefix of
// k blocks from one of several groups followed by n-k blocks of their own has a designed reuse
// of k/n once its groups' prefixes were sent (traces.PrimeRequests, `run --prime-prefixes`):
// every request then finds exactly its prefix cached.

// Prefix-hit shape bounds: a prompt is 2 to MaxHitBlocks blocks, at least one of them the
// request's own (a fully cached prompt is impossible: servers recompute at least its last
// token).
const (
	MaxHitBlocks = 32
	// DefaultHitGroups is the number of prefix groups a class without any gets.
	DefaultHitGroups = 8
)

// HitShape picks the prompt of a designed hit rate: n blocks of which k are the shared
// prefix, with k/n the closest to rate over 2 <= n <= MaxHitBlocks (the fewest blocks among
// equally close ones) and k <= n-1. rate must be in [0, 1).
func HitShape(rate float64) (k, n int, err error) {
	if math.IsNaN(rate) || rate < 0 || rate >= 1 {
		return 0, 0, fmt.Errorf("prefix hit rate %v: want a fraction in [0, 1)", rate)
	}
	best := math.Inf(1)
	for m := 2; m <= MaxHitBlocks; m++ {
		j := min(int(math.Round(rate*float64(m))), m-1)
		if e := math.Abs(float64(j)/float64(m) - rate); e < best-1e-12 {
			best, k, n = e, j, m
		}
	}
	return k, n, nil
}

// SetPrefixHitRate reshapes every class of spec so that its requests' designed reuse after
// priming is rate, to the nearest k/n of HitShape: each prompt is n blocks of
// spec.BlockTokens, the first k a prefix shared with its group (the class's groups and their
// popularity are kept; a class without a prefix gets DefaultHitGroups uniform groups), the
// rest its own. Every request of the class then uses a prefix. Output lengths, arrivals and
// weights are unchanged. Classes with sessions or images are refused: their reuse grows
// with the conversation or depends on the images, not on the prefix alone. It returns the
// designed rate k/n.
func SetPrefixHitRate(spec *Spec, rate float64) (float64, error) {
	k, n, err := HitShape(rate)
	if err != nil {
		return 0, err
	}
	if len(spec.Classes) == 0 {
		return 0, errors.New("prefix hit rate: the spec has no classes")
	}
	b := spec.BlockTokens
	if b <= 0 {
		b = 512
	}
	for i := range spec.Classes {
		c := &spec.Classes[i]
		if c.Session != nil || c.Images != nil {
			return 0, fmt.Errorf("prefix hit rate: class %q has sessions or images, whose reuse is not set by a shared prefix alone", c.Name)
		}
		c.Input = Dist{Kind: Fixed, Value: (n - k) * b}
		if k == 0 {
			c.Prefix = nil
			continue
		}
		p := PrefixSpec{Groups: DefaultHitGroups}
		if c.Prefix != nil {
			p.Groups, p.Zipf = c.Prefix.Groups, c.Prefix.Zipf
		}
		p.Tokens = k * b
		c.Prefix = &p
	}
	return float64(k) / float64(n), spec.Validate()
}

// prefixHitClass is the prefix-hit preset's class: 8 uniform prefix groups of 4 blocks and one
// block of the request's own (512-token blocks: 4096 + 1024 tokens), a designed hit rate of
// 80% once primed; gen --prefix-hit-rate sets another.
func prefixHitClass() ClassSpec {
	return ClassSpec{Name: "prefix-hit", Input: Dist{Kind: Fixed, Value: 1024}, Output: logn(200, 150, 1024),
		Prefix: &PrefixSpec{Groups: DefaultHitGroups, Tokens: 4096}}
}
