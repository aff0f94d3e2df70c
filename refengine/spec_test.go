package refengine

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/llmbench/llmbench/refengine/perf"
	"github.com/llmbench/llmbench/tokenizer"
)

// streamChunks posts a streaming completion and returns the token count of each content chunk
// (counted with the reference tokenizer) and the concatenated text.
func streamChunks(t testing.TB, url, body, id string) ([]int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/completions", strings.NewReader(body))
	req.Header.Set("X-Request-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return nil, ""
	}
	defer resp.Body.Close()
	var counts []int
	var text strings.Builder
	var tok tokenizer.Reference
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: {") {
			continue
		}
		c := decodeChunk(t, strings.TrimPrefix(line, "data: "))
		if len(c.Choices) == 1 {
			counts = append(counts, tok.Count(*c.Choices[0].Text))
			text.WriteString(*c.Choices[0].Text)
		}
	}
	return counts, text.String()
}

// TestTimelineMatchesClient runs concurrent streams and checks that the ground truth lists the
// same chunks, in the same order with the same token counts, as each client saw.
func TestTimelineMatchesClient(t *testing.T) {
	for _, tc := range []struct {
		spec   int
		disagg bool
	}{{0, false}, {4, false}, {0, true}} {
		spec := tc.spec
		e, url := startEngine(t, Config{SpecK: spec, SpecAlpha: 0.8, TimeScale: 100, Disaggregated: tc.disagg})
		var wg sync.WaitGroup
		const n = 24
		counts := make([][]int, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := fmt.Sprintf(`{"prompt":"request number %d asks for words","max_tokens":%d,"temperature":0,"stream":true}`, i, 10+3*i)
				counts[i], _ = streamChunks(t, url, body, fmt.Sprintf("k%d", i))
			}()
		}
		wg.Wait()
		multi := false
		for i := 0; i < n; i++ {
			tl, ok := e.Timeline(fmt.Sprintf("k%d", i))
			if !ok || !tl.Done {
				t.Fatalf("spec %d: no finished timeline for k%d", spec, i)
			}
			if len(tl.Emissions) != len(counts[i]) {
				t.Fatalf("spec %d k%d: %d emissions, client saw %d chunks", spec, i, len(tl.Emissions), len(counts[i]))
			}
			sum := 0
			for j, em := range tl.Emissions {
				if em.Tokens != counts[i][j] {
					t.Fatalf("spec %d k%d chunk %d: engine emitted %d tokens, client counted %d", spec, i, j, em.Tokens, counts[i][j])
				}
				if j > 0 && em.At < tl.Emissions[j-1].At {
					t.Fatalf("k%d: emissions out of order", i)
				}
				multi = multi || em.Tokens > 1
				sum += em.Tokens
			}
			if len(tl.Sent) != len(tl.Emissions) {
				t.Fatalf("k%d: %d sent times for %d emissions", i, len(tl.Sent), len(tl.Emissions))
			}
			for j, at := range tl.Sent {
				if at < tl.Emissions[j].At {
					t.Fatalf("k%d: chunk %d sent at %v, before its emission at %v", i, j, at, tl.Emissions[j].At)
				}
			}
			if sum != 10+3*i || tl.OutputTokens != sum || tl.FirstScheduled < tl.Arrival || tl.Emissions[0].At <= tl.FirstScheduled {
				t.Fatalf("k%d: timeline %+v", i, tl)
			}
			if w := tl.Wall(tl.Finish); w.Before(tl.Wall(tl.Arrival)) {
				t.Fatalf("k%d: wall finish before arrival", i)
			}
		}
		if (spec > 0) != multi {
			t.Fatalf("spec %d: multi-token chunks seen = %v", spec, multi)
		}
	}
}

// TestSpecGreedyTextIdentical checks that speculative decoding changes speed, not text.
func TestSpecGreedyTextIdentical(t *testing.T) {
	_, plain := startEngine(t, Config{})
	_, spec := startEngine(t, Config{SpecK: 4, SpecAlpha: 0.9})
	body := `{"prompt":"Tell me a story about a robot.","max_tokens":64,"temperature":0,"stream":true}`
	c1, t1 := streamChunks(t, plain, body, "a")
	c2, t2 := streamChunks(t, spec, body, "a")
	if t1 != t2 {
		t.Fatalf("greedy text differs with speculation:\n%q\n%q", t1, t2)
	}
	if len(c2) >= len(c1) {
		t.Fatalf("speculation sent %d chunks, plain %d: want fewer", len(c2), len(c1))
	}
	// Seeded sampling is reproducible; a different seed changes the text.
	s1 := `{"prompt":"x y","max_tokens":16,"temperature":0.8,"seed":7}`
	_, a := post(t, plain+"/v1/completions", s1)
	_, b := post(t, spec+"/v1/completions", s1)
	_, c := post(t, plain+"/v1/completions", strings.Replace(s1, `"seed":7`, `"seed":8`, 1))
	ta, tb, tc := decodeText(t, a), decodeText(t, b), decodeText(t, c)
	if ta != tb || ta == tc {
		t.Fatalf("seeded texts: %q %q %q", ta, tb, tc)
	}
	// Unseeded sampling varies.
	u1 := decodeText(t, second(post(t, plain+"/v1/completions", `{"prompt":"x y","max_tokens":16}`)))
	u2 := decodeText(t, second(post(t, plain+"/v1/completions", `{"prompt":"x y","max_tokens":16}`)))
	if u1 == u2 {
		t.Fatalf("unseeded sampling repeated %q", u1)
	}
}

func second[A, B any](_ A, b B) B { return b }

func decodeText(t testing.TB, body []byte) string {
	t.Helper()
	c := decodeChunk(t, string(body))
	if len(c.Choices) != 1 || c.Choices[0].Text == nil {
		t.Fatalf("no text in %s", body)
	}
	return *c.Choices[0].Text
}

// TestSpecTokensPerPass pins the measured tokens per verification pass to the closed form
// (1-α^(k+1))/(1-α) within 2% over at least 10,000 passes.
func TestSpecTokensPerPass(t *testing.T) {
	for _, tc := range []struct {
		alpha float64
		want  float64
	}{{0.6, 2.31}, {0.8, 3.36}, {0.9, 4.10}} {
		reqs := make([]SimRequest, 200)
		for i := range reqs {
			reqs[i] = SimRequest{ID: fmt.Sprintf("s%d", i), PromptTokens: 64, MaxTokens: 400}
		}
		res, err := Simulate(reqs, Config{SpecK: 4, SpecAlpha: tc.alpha})
		if err != nil {
			t.Fatal(err)
		}
		st := res.Stats
		if st.SpecPasses < 10000 {
			t.Fatalf("α=%g: only %d passes", tc.alpha, st.SpecPasses)
		}
		// Tokens emitted by verification passes: accepted drafts plus one each. Passes near
		// max_tokens verify fewer than k drafts; count only full passes via the timelines.
		full, tokens := 0, 0
		for _, tl := range res.Timelines {
			emitted := tl.Emissions[0].Tokens // the first token comes from prefill
			for _, em := range tl.Emissions[1:] {
				if tl.MaxTokens-emitted >= 5 {
					full++
					tokens += em.Tokens
				}
				emitted += em.Tokens
			}
		}
		got := float64(tokens) / float64(full)
		closed := perf.ExpectedTokensPerPass(tc.alpha, 4)
		if math.Abs(closed-tc.want) > 0.01 {
			t.Fatalf("closed form %g, issue says %g", closed, tc.want)
		}
		t.Logf("α=%g k=4: %.3f tokens per pass over %d passes (closed form %.3f)", tc.alpha, got, full, closed)
		if math.Abs(got-closed)/closed > 0.02 {
			t.Fatalf("α=%g: %.3f tokens per pass over %d passes, want %.3f ± 2%%", tc.alpha, got, full, closed)
		}
		// Acceptance stops at the first rejection, so the accepted fraction of drafts is
		// (E[tokens per pass] - 1) / k, not α.
		if rate := float64(st.SpecAccepted) / float64(st.SpecDraftTokens); math.Abs(rate-(closed-1)/4) > 0.02 {
			t.Fatalf("α=%g: acceptance rate %.3f", tc.alpha, rate)
		}
	}
}

// TestHTTPStepsFollowTheModel checks that the HTTP engine's ground truth follows the priced
// schedule exactly, whatever the OS timer precision at a high time scale: a lone request's
// token gaps equal Simulate's.
func TestHTTPStepsFollowTheModel(t *testing.T) {
	e, url := startEngine(t, Config{TimeScale: 100})
	post(t, url+"/v1/completions", `{"prompt":"hello there","max_tokens":60,"temperature":0}`, "X-Request-Id", "d")
	got, _ := e.Timeline("d")
	res, err := Simulate([]SimRequest{{ID: "d", Prompt: "hello there", MaxTokens: 60}}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := res.Timelines[0]
	if len(got.Emissions) != len(want.Emissions) || got.OutputSeed != want.OutputSeed {
		t.Fatalf("%d emissions vs %d; seeds %x %x", len(got.Emissions), len(want.Emissions), got.OutputSeed, want.OutputSeed)
	}
	for i := 1; i < len(want.Emissions); i++ {
		g, w := got.Emissions[i].At-got.Emissions[i-1].At, want.Emissions[i].At-want.Emissions[i-1].At
		if g != w {
			t.Fatalf("gap %d: HTTP %v, Simulate %v", i, g, w)
		}
	}
	if got.Emissions[0].At-got.FirstScheduled != want.Emissions[0].At-want.FirstScheduled {
		t.Fatalf("prefill step %v vs %v", got.Emissions[0].At-got.FirstScheduled, want.Emissions[0].At-want.FirstScheduled)
	}
}
