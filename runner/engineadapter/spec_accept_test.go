package engineadapter

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// specTruth is the acceptance a chain of k drafts accepted from the left with probability
// alpha each has: the mean accepted tokens per pass E[a] = alpha + ... + alpha^k, its standard
// deviation, the acceptance rate E[a]/k and the mean accepted length 1 + E[a].
func specTruth(k int, alpha float64) (mean, sd float64) {
	var m, m2 float64
	for a := 0; a <= k; a++ {
		p := math.Pow(alpha, float64(a))
		if a < k {
			p *= 1 - alpha
		}
		m += float64(a) * p
		m2 += float64(a*a) * p
	}
	return m, math.Sqrt(m2 - m*m)
}

// specRun replays 40 requests of 300 output tokens over HTTP against the engine (k 4, alpha
// 0.7) speaking wire, with --scrape-metrics, and returns the summary.
func specRun(t *testing.T, wire, backend string) *metrics.Summary {
	t.Helper()
	const scale = 2
	eng, err := refengine.New(refengine.Config{Seed: 3, TimeScale: scale, Wire: wire, SpecK: 4, SpecAlpha: 0.7})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := httptest.NewServer(eng.Handler())
	defer srv.Close()
	var reqs []traces.Request
	for i := range 40 {
		reqs = append(reqs, traces.Request{ID: fmt.Sprint("s", i), Arrival: time.Duration(i) * 25 * time.Millisecond, InputTokens: 256, OutputTokens: 300})
	}
	res, err := runner.RunHTTP(context.Background(), runner.HTTPRun{
		Trace: traces.FromSlice(reqs),
		Load: loadgen.Options{Target: loadgen.Target{URL: srv.URL, Model: eng.ServedModelName(), Backend: backend, API: "chat", Stream: true},
			Tokenizer: tokenizer.Reference{}, Seed: 1, Grace: time.Second},
		TimeScale: scale, OutDir: t.TempDir(), Scrape: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Requests.Succeeded != 40 {
		t.Fatalf("%s: %+v", wire, res.Summary.Requests)
	}
	return res.Summary
}

// TestServerAcceptanceMatchesSpecAlpha: the engine's true acceptance (k 4, alpha 0.7) read
// back as the server reports it, on each wire: vLLM's counters scraped over the run's window
// and llama.cpp's per-response timings. Both come within 4 standard errors of the truth over
// the run's ~2,800 passes. (On a real clock a loaded machine may deliver several passes in one
// read, so the client's bursts are compared on a virtual clock, in
// TestClientBurstsAgreeWithServerAcceptance.)
func TestServerAcceptanceMatchesSpecAlpha(t *testing.T) {
	mean, sd := specTruth(4, 0.7)
	for _, tc := range []struct{ wire, backend string }{{"vllm", "vllm"}, {"llamacpp", "llamacpp"}} {
		s := specRun(t, tc.wire, tc.backend)
		sp := s.Speculative
		if sp == nil || sp.Server == nil || !sp.Server.Available {
			t.Fatalf("%s: speculative block %+v: the engine's vLLM counters were not read", tc.wire, sp)
		}
		check := func(what string, rate, length, passes float64) {
			se := sd / math.Sqrt(passes)
			if math.Abs(rate*4-mean) > 4*se || math.Abs(length-(1+mean)) > 4*se {
				t.Errorf("%s %s: acceptance rate %.4f, mean accepted length %.4f over %.0f passes; truth %.4f and %.4f (± %.4f)",
					tc.wire, what, rate, length, passes, mean/4, 1+mean, 4*se)
			}
		}
		check("counters", sp.Server.AcceptanceRate, sp.Server.MeanAcceptedLength, sp.Server.Drafts)
		if tc.wire == "llamacpp" {
			r := sp.Responses
			if r == nil || r.Source != metrics.SpecFromTimings || r.Requests != 40 {
				t.Fatalf("llamacpp: responses %+v", r)
			}
			passes := float64(r.DraftTokens) / 4
			check("timings", r.AcceptanceRate, 1+float64(r.Accepted)/passes, passes)
			if float64(r.DraftTokens) != sp.Server.DraftTokens || float64(r.Accepted) != sp.Server.Accepted {
				t.Errorf("the responses' draft_n %d / accepted %d differ from the counters' %v / %v over the same run", r.DraftTokens, r.Accepted, sp.Server.DraftTokens, sp.Server.Accepted)
			}
		}
	}
}

// TestClientBurstsAgreeWithServerAcceptance: on the bubble's virtual clock each verification
// pass arrives as one burst, so the client's tokens per decode burst match the server's mean
// accepted length (the llama.cpp timings of every response) within sampling error, and the
// summary says they agree, with no warning.
func TestClientBurstsAgreeWithServerAcceptance(t *testing.T) {
	var reqs []traces.Request
	for i := range 40 {
		reqs = append(reqs, traces.Request{ID: fmt.Sprint("s", i), Arrival: time.Duration(i) * 25 * time.Millisecond, InputTokens: 256, OutputTokens: 300})
	}
	var recs []metrics.Record
	synctest.Test(t, func(t *testing.T) {
		eng, ln, stop := bubbleEngine(t, refengine.Config{Seed: 3, Wire: "llamacpp", SpecK: 4, SpecAlpha: 0.7, Clock: &bubbleClock{epoch: time.Now()}})
		defer stop()
		replayInto(t, reqs, bubbleOptions(eng, ln, "llamacpp", "chat", true), &recs)
	})
	s, err := metrics.Summarize(metrics.SliceSource(recs), metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sp := s.Speculative
	if sp == nil || sp.Responses == nil || sp.Agree != "agree" {
		t.Fatalf("speculative %+v", sp)
	}
	mean, sd := specTruth(4, 0.7)
	if c := sp.Client; math.Abs(c.TokensPerBurst-(1+mean)) > 4*sd/math.Sqrt(float64(c.Bursts)) {
		t.Errorf("client %.4f tokens per decode burst over %d bursts, truth %.4f", c.TokensPerBurst, c.Bursts, 1+mean)
	}
	for _, w := range s.Warnings {
		if strings.Contains(w, "speculative") {
			t.Errorf("warning: %s", w)
		}
	}
	t.Log(sp.Comparison)
}
