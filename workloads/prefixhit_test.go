package workloads

import (
	"math"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/traces"
)

func TestHitShape(t *testing.T) {
	for _, c := range []struct {
		rate float64
		k, n int
	}{{0, 0, 2}, {0.5, 1, 2}, {0.8, 4, 5}, {0.9, 9, 10}, {0.85, 17, 20}, {0.86, 25, 29}, {0.95, 19, 20}, {0.99, 31, 32}, {1.0 / 3, 1, 3}} {
		k, n, err := HitShape(c.rate)
		if err != nil || k != c.k || n != c.n {
			t.Errorf("HitShape(%v) = %d/%d, %v; want %d/%d", c.rate, k, n, err, c.k, c.n)
		}
	}
	for _, bad := range []float64{-0.1, 1, 1.5, math.NaN(), math.Inf(1)} {
		if _, _, err := HitShape(bad); err == nil {
			t.Errorf("HitShape(%v): no error", bad)
		}
	}
}

// TestSetPrefixHitRateDesigned: over many seeds, a generated prefix-hit trace's designed reuse
// once primed is exactly the requested rate, and without priming it is below it by the
// groups' first requests.
func TestSetPrefixHitRateDesigned(t *testing.T) {
	for _, rate := range []float64{0.5, 0.8, 0.9} {
		for seed := int64(1); seed <= 20; seed++ {
			spec, err := Preset("prefix-hit")
			if err != nil {
				t.Fatal(err)
			}
			spec.Seed, spec.DurationS, spec.Arrival.Rate = seed, 30, 4
			got, err := SetPrefixHitRate(&spec, rate)
			if err != nil || got != rate {
				t.Fatalf("SetPrefixHitRate(%v) = %v, %v", rate, got, err)
			}
			reqs, err := Generate(spec)
			if err != nil {
				t.Fatal(err)
			}
			primed := traces.PrimeRequests(reqs, spec.BlockTokens)
			after := traces.DesignedReuseAfter(primed, reqs, spec.BlockTokens)
			plain := traces.DesignedReuseByID(reqs, spec.BlockTokens)
			var cached, plainCached, input int64
			for _, r := range reqs {
				cached += after[r.ID].First
				plainCached += plain[r.ID].First
				input += after[r.ID].Input
			}
			if math.Abs(float64(cached)/float64(input)-rate) > 1e-12 {
				t.Fatalf("rate %v seed %d: primed designed %d/%d", rate, seed, cached, input)
			}
			firsts := int64(len(primed) * primed[0].InputTokens)
			if int64(len(primed)) > DefaultHitGroups || plainCached != cached-firsts {
				t.Fatalf("rate %v seed %d: %d groups primed, plain designed %d, want %d", rate, seed, len(primed), plainCached, cached-firsts)
			}
		}
	}
}

func TestSetPrefixHitRateKeepsGroupsAndRefusesSessions(t *testing.T) {
	spec, _ := Preset("rag")
	if _, err := SetPrefixHitRate(&spec, 0.75); err != nil {
		t.Fatal(err)
	}
	c := spec.Classes[0]
	if c.Prefix.Groups != 8 || c.Prefix.Zipf != 1 || c.Prefix.Tokens != 3*512 || c.Input.Value != 512 {
		t.Fatalf("rag reshaped to %+v, input %+v", *c.Prefix, c.Input)
	}
	spec, _ = Preset("chat")
	if _, err := SetPrefixHitRate(&spec, 0); err != nil || spec.Classes[0].Prefix != nil {
		t.Fatalf("rate 0: %v, prefix %+v", err, spec.Classes[0].Prefix)
	}
	spec, _ = Preset("agentic")
	if _, err := SetPrefixHitRate(&spec, 0.5); err == nil || !strings.Contains(err.Error(), "sessions") {
		t.Fatalf("agentic: %v", err)
	}
}
