package refengine

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/llmbench/llmbench/tokenizer"
)

// synthTrace returns n requests at the given mean rate (req/s) with deterministic
// pseudo-random exponential gaps and lengths.
func synthTrace(n int, rate float64, inMax, outMax int) []SimRequest {
	reqs := make([]SimRequest, n)
	var st uint64 = 42
	var t time.Duration
	for i := range reqs {
		u := uniform(&st)
		t += time.Duration(-math.Log(1-u) / rate * float64(time.Second))
		reqs[i] = SimRequest{
			ID:           fmt.Sprintf("r%d", i),
			Arrival:      t,
			PromptTokens: 16 + int(uniform(&st)*float64(inMax)),
			MaxTokens:    1 + int(uniform(&st)*float64(outMax)),
		}
	}
	return reqs
}

func TestSimulateBasics(t *testing.T) {
	reqs := synthTrace(2000, 20, 2000, 400)
	res, err := Simulate(reqs, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, tl := range res.Timelines {
		if !tl.Done || tl.OutputTokens != reqs[i].MaxTokens || tl.FinishReason != "length" {
			t.Fatalf("request %d: done=%v output=%d want %d reason %q", i, tl.Done, tl.OutputTokens, reqs[i].MaxTokens, tl.FinishReason)
		}
		sum := 0
		prev := tl.Arrival
		for _, em := range tl.Emissions {
			if em.At < prev || em.Tokens != 1 {
				t.Fatalf("request %d: emission %+v after %v", i, em, prev)
			}
			prev = em.At
			sum += em.Tokens
		}
		if sum != tl.OutputTokens || tl.Finish != prev || tl.FirstScheduled < tl.Arrival {
			t.Fatalf("request %d: inconsistent timeline %+v", i, tl)
		}
	}
	t.Logf("stats %+v", res.Stats)
}

func BenchmarkSimulate10k(b *testing.B)  { benchSimulate(b, 10000) }
func BenchmarkSimulate100k(b *testing.B) { benchSimulate(b, 100000) }

func benchSimulate(b *testing.B, n int) {
	reqs := synthTrace(n, 20, 1500, 300)
	b.ReportAllocs()
	for b.Loop() {
		res, err := Simulate(reqs, Config{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Stats.Steps), "steps")
	}
}

var _ = tokenizer.Mix
