package metrics

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// specRecords are n requests decoding speculatively with k=4 and per-position acceptance
// alpha: each pass emits 1 + accepted tokens in one burst (chunks 10 ms apart); the first
// burst is the prefill's single token and the last is cut to max tokens. It returns the
// records and the true passes and accepted tokens of the full decode passes.
func specRecords(seed uint64, n int, alpha float64, src string) (SliceSource, int64, int64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var recs SliceSource
	var passes, accepted int64
	for i := range n {
		const out = 200
		var toks []int32
		var gaps []float64
		toks = append(toks, 1)
		left := out - 1
		var recPasses, recAcc int
		for left > 0 {
			a := 0
			for a < 4 && rng.Float64() < alpha {
				a++
			}
			emit := min(1+a, left)
			recPasses++
			recAcc += a
			if emit == 1+a && left > 1+a {
				passes++
				accepted += int64(a)
			}
			toks = append(toks, int32(emit))
			gaps = append(gaps, 10)
			left -= emit
		}
		r := timeline(fmt.Sprint("s", i), float64(i*50), 40, gaps, toks)
		switch src {
		case SpecFromTimings:
			r.SpecSource, r.SpecDraftTokens, r.SpecAcceptedTokens = src, 4*recPasses, recAcc
		case SpecFromMetaInfo:
			r.SpecSource, r.SpecPasses = src, recPasses+1
		}
		recs = append(recs, r)
	}
	return recs, passes, accepted
}

// TestSpeculativeAgreesWithTruth: over 20 seeded runs, the client's tokens per decode burst
// matches 1 + accepted / passes within 4 standard errors, llama.cpp-style per-response counts
// give the acceptance rate exactly, and the block agrees.
func TestSpeculativeAgreesWithTruth(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		recs, passes, accepted := specRecords(seed, 40, 0.7, SpecFromTimings)
		s, err := Summarize(recs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		sp := s.Speculative
		if sp == nil || sp.Responses == nil {
			t.Fatalf("seed %d: no speculative block", seed)
		}
		truth := 1 + float64(accepted)/float64(passes)
		c := sp.Client
		if d := c.TokensPerBurst - truth; d > 4*c.StdErr || d < -4*c.StdErr || c.Bursts != passes {
			t.Errorf("seed %d: client %.4f ± %.4f over %d bursts, truth %.4f over %d passes", seed, c.TokensPerBurst, c.StdErr, c.Bursts, truth, passes)
		}
		var draft, acc int64
		for _, r := range recs {
			draft += int64(r.SpecDraftTokens)
			acc += int64(r.SpecAcceptedTokens)
		}
		if sp.Responses.AcceptanceRate != float64(acc)/float64(draft) || sp.Responses.Requests != 40 {
			t.Errorf("seed %d: responses %+v, want rate %v", seed, sp.Responses, float64(acc)/float64(draft))
		}
		if sp.Agree != "agree" {
			t.Errorf("seed %d: %s: %s", seed, sp.Agree, sp.Comparison)
		}
	}
}

// TestSpeculativeServerCounters: the window delta of vLLM-style counters, with a reset, and a
// server figure that disagrees with the client's bursts (the stream merged passes) warns; one
// that matches replaces the warning.
func TestSpeculativeServerCounters(t *testing.T) {
	pts := []SpecCounterPoint{{T: -1, Drafts: 100, DraftTokens: 400, Accepted: 200}, {T: 5, Drafts: 600, DraftTokens: 2400, Accepted: 1200},
		{T: 8, Drafts: 50, DraftTokens: 200, Accepted: 150}, {T: 12, Drafts: 450, DraftTokens: 1800, Accepted: 950}, {T: 20, Drafts: 9e9}}
	d := ServerSpeculativeDelta("vllm", "vllm:spec_decode_*", pts, 0, 11)
	if !d.Available || d.Drafts != 500+50+400 || d.Accepted != 1000+150+800 || d.Resets != 1 {
		t.Fatalf("delta %+v", d)
	}
	if d.AcceptanceRate != 1950.0/3800 || d.MeanAcceptedLength != 1+1950.0/950 {
		t.Errorf("rates %+v", d)
	}
	recs, passes, accepted := specRecords(3, 40, 0.7, "")
	s, err := Summarize(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Speculative != nil {
		t.Fatalf("a block without any server figure: %+v", s.Speculative)
	}
	wrong := &ServerSpeculative{Available: true, Source: "vllm", Drafts: float64(passes) / 2, Accepted: float64(accepted)}
	wrong.MeanAcceptedLength = 1 + wrong.Accepted/wrong.Drafts
	AttachServerSpeculative(s, wrong)
	if s.Speculative.Agree != "disagree" || len(s.Warnings) == 0 || !strings.HasPrefix(s.Warnings[len(s.Warnings)-1], specWarnPrefix) {
		t.Fatalf("disagreement not warned: %+v %v", s.Speculative, s.Warnings)
	}
	right := &ServerSpeculative{Available: true, Source: "vllm", Drafts: float64(passes), Accepted: float64(accepted)}
	right.MeanAcceptedLength = 1 + right.Accepted/right.Drafts
	AttachServerSpeculative(s, right)
	for _, w := range s.Warnings {
		if strings.HasPrefix(w, specWarnPrefix) {
			t.Errorf("warning kept after agreement: %s", w)
		}
	}
	if s.Speculative.Agree != "agree" {
		t.Errorf("%s", s.Speculative.Comparison)
	}
}
