package refengine

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/refengine/perf"
)

// methodConfigs are one configuration per speculative method, all with k = 4.
var methodConfigs = []struct {
	name string
	cfg  Config
}{
	{"free", Config{SpecK: 4, SpecAlpha: 0.8}},
	{"draft", Config{SpecK: 4, SpecMethod: "draft", SpecDraftModel: "llama-3.2-1b", SpecAlpha: 0.7}},
	{"eagle", Config{SpecK: 4, SpecMethod: "eagle", SpecAlphas: []float64{0.85, 0.75, 0.7, 0.65}}},
	{"medusa", Config{SpecK: 4, SpecMethod: "medusa", SpecTree: 32, SpecAlphas: []float64{0.8, 0.65, 0.55, 0.5}}},
	{"ngram", Config{SpecK: 4, SpecMethod: "ngram", SpecRepetition: map[string]float64{"": 0.6}}},
}

// TestSpecMethodsGreedyTextIdentical: every method changes speed, never the text. Each streams
// the same greedy request as a plain engine and must send the same text in fewer chunks.
func TestSpecMethodsGreedyTextIdentical(t *testing.T) {
	_, plain := startEngine(t, Config{})
	body := `{"prompt":"Summarize the quarterly report in plain words.","max_tokens":80,"temperature":0,"stream":true}`
	c0, t0 := streamChunks(t, plain, body, "p")
	for _, m := range methodConfigs {
		t.Run(m.name, func(t *testing.T) {
			_, url := startEngine(t, m.cfg)
			c1, t1 := streamChunks(t, url, body, "p")
			if t1 != t0 {
				t.Fatalf("greedy text differs with %s speculation:\n%q\n%q", m.name, t0, t1)
			}
			if len(c1) >= len(c0) {
				t.Fatalf("%s: %d chunks, plain %d: want fewer (multi-token verification bursts)", m.name, len(c1), len(c0))
			}
		})
	}
}

// TestSpecPositionalTokensPerPass holds the measured tokens per full verification pass to
// 1 + Σ Π α_j (per-position acceptance) within 2% over at least 10,000 passes, for a chain
// (eagle) and a tree (medusa).
func TestSpecPositionalTokensPerPass(t *testing.T) {
	for _, m := range methodConfigs[2:4] {
		reqs := make([]SimRequest, 200)
		for i := range reqs {
			reqs[i] = SimRequest{ID: fmt.Sprintf("s%d", i), PromptTokens: 64, MaxTokens: 400}
		}
		res, err := Simulate(reqs, m.cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, full := fullPassTokens(res, 5)
		want := perf.ExpectedTokensPerPassPositional(m.cfg.SpecAlphas, 4)
		t.Logf("%s: %.3f tokens per pass over %d passes (closed form %.3f)", m.name, got, full, want)
		if full < 10000 || math.Abs(got-want)/want > 0.02 {
			t.Fatalf("%s: %.3f tokens per pass over %d passes, want %.3f ± 2%% over >= 10000", m.name, got, full, want)
		}
	}
}

// fullPassTokens is the mean number of tokens per emission after the first, counting only
// emissions made while at least need tokens remained (so a full k-token draft was possible).
func fullPassTokens(res *SimResult, need int) (float64, int) {
	full, tokens := 0, 0
	for _, tl := range res.Timelines {
		emitted := tl.Emissions[0].Tokens
		for _, em := range tl.Emissions[1:] {
			if tl.MaxTokens-emitted >= need {
				full++
				tokens += em.Tokens
			}
			emitted += em.Tokens
		}
	}
	return float64(tokens) / float64(full), full
}

// TestSpecNgramRepetitionPerClass: under prompt lookup a step emits 1 + ρ² + … + ρ^(k+1)
// tokens on average, with ρ the repetition of the request's class (a summarization class that
// copies its input, and chat that rarely does).
func TestSpecNgramRepetitionPerClass(t *testing.T) {
	rep := map[string]float64{"summarize": 0.85, "": 0.25}
	cfg := Config{SpecK: 4, SpecMethod: "ngram", SpecRepetition: rep}
	var reqs []SimRequest
	for i := 0; i < 300; i++ {
		class := "chat"
		if i%2 == 0 {
			class = "summarize"
		}
		reqs = append(reqs, SimRequest{ID: fmt.Sprintf("n%d", i), PromptTokens: 64, MaxTokens: 300, Class: class})
	}
	res, err := Simulate(reqs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for class, rho := range map[string]float64{"summarize": 0.85, "chat": 0.25} {
		sub := &SimResult{}
		for i, tl := range res.Timelines {
			if reqs[i].Class == class {
				sub.Timelines = append(sub.Timelines, tl)
			}
		}
		got, steps := fullPassTokens(sub, 5)
		want := perf.ExpectedNgramTokensPerStep(rho, 4)
		t.Logf("%s (ρ=%g): %.3f tokens per step over %d steps (closed form %.3f)", class, rho, got, steps, want)
		if steps < 10000 || math.Abs(got-want)/want > 0.02 {
			t.Fatalf("%s: %.3f tokens per step over %d steps, want %.3f ± 2%%", class, got, steps, want)
		}
	}
}

// speedup is plain decode time over speculative decode time (mean TPOT ratio) at a running
// batch of batch sequences: max(batch, 32) requests of 256 prompt and 256 output tokens
// arrive at once and MaxNumSeqs is batch.
func speedup(t *testing.T, cfg Config, batch int) float64 {
	t.Helper()
	n := max(batch, 32)
	reqs := make([]SimRequest, n)
	for i := range reqs {
		reqs[i] = SimRequest{ID: fmt.Sprintf("b%d", i), PromptTokens: 256, MaxTokens: 256, Class: "chat"}
	}
	tpot := func(c Config) float64 {
		c.MaxNumSeqs = batch
		res, err := Simulate(reqs, c)
		if err != nil {
			t.Fatal(err)
		}
		var sum time.Duration
		for _, tl := range res.Timelines {
			sum += (tl.E2E() - tl.TTFT()) / time.Duration(tl.OutputTokens-1)
		}
		return float64(sum) / float64(n)
	}
	return tpot(Config{}) / tpot(cfg)
}

// TestSpecBenefitShrinksUnderLoad: verification tokens are priced like any other, so once the
// batch is large enough to be compute-bound the k (or tree) extra tokens per sequence cost
// what they save, as seed 000 says. Every method's speedup falls from batch 1 to batch 256,
// each priced method is slower than free drafting at the same acceptance, and a wide Medusa
// tree ends up slower than no speculation at all.
func TestSpecBenefitShrinksUnderLoad(t *testing.T) {
	alphas := []float64{0.8}
	cfgs := map[string]Config{
		"free":   {SpecK: 4, SpecAlphas: alphas},
		"draft":  {SpecK: 4, SpecMethod: "draft", SpecDraftModel: "llama-3.2-1b", SpecAlphas: alphas},
		"eagle":  {SpecK: 4, SpecMethod: "eagle", SpecAlphas: alphas},
		"medusa": {SpecK: 4, SpecMethod: "medusa", SpecTree: 64, SpecAlphas: alphas},
		"ngram":  {SpecK: 4, SpecMethod: "ngram", SpecRepetition: map[string]float64{"": 0.8}},
	}
	b1 := map[string]float64{}
	for _, name := range []string{"free", "draft", "eagle", "medusa", "ngram"} {
		lo, hi := speedup(t, cfgs[name], 1), speedup(t, cfgs[name], 256)
		b1[name] = lo
		t.Logf("%-6s speedup: batch 1 %.2fx, batch 256 %.2fx", name, lo, hi)
		if !(lo > 1.3) || !(hi < lo) {
			t.Errorf("%s: speedup %.2fx at batch 1 and %.2fx at batch 256: want > 1.3x, falling under load", name, lo, hi)
		}
		if name == "medusa" && !(hi < 1) {
			t.Errorf("medusa with a 64-candidate tree: %.2fx at batch 256, want slower than plain decoding", hi)
		}
	}
	for _, name := range []string{"draft", "eagle", "medusa"} {
		if !(b1[name] < b1["free"]) {
			t.Errorf("%s at batch 1: %.2fx, want below free drafting's %.2fx (its drafter costs time)", name, b1[name], b1["free"])
		}
	}
	if !(b1["eagle"] > b1["draft"]) {
		t.Errorf("eagle %.2fx vs a 1B draft model %.2fx at batch 1: one layer should cost less than a model", b1["eagle"], b1["draft"])
	}
}

// TestSpecMethodMemory: a drafter's weights come out of the KV cache (draft model, EAGLE head,
// Medusa heads); prompt lookup needs none.
func TestSpecMethodMemory(t *testing.T) {
	blocks := func(c Config) int {
		r, err := c.resolve()
		if err != nil {
			t.Fatal(err)
		}
		return r.numBlocks
	}
	plain := blocks(Config{})
	for _, m := range methodConfigs {
		b := blocks(m.cfg)
		if (m.name == "free" || m.name == "ngram") != (b == plain) || b > plain {
			t.Errorf("%s: %d KV blocks, plain %d", m.name, b, plain)
		}
	}
}

func TestSpecMethodConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{SpecK: 4, SpecMethod: "lookahead"}, "unknown speculative method"},
		{Config{SpecMethod: "eagle"}, "need SpecK > 0"},
		{Config{SpecK: 4, SpecMethod: "draft"}, "needs SpecDraftModel"},
		{Config{SpecK: 4, SpecMethod: "eagle", SpecDraftModel: "llama-3.2-1b"}, "has none"},
		{Config{SpecK: 4, SpecMethod: "ngram", SpecAlpha: 0.7}, "repetition"},
		{Config{SpecK: 4, SpecTree: 16}, "only the eagle and medusa"},
		{Config{SpecK: 4, SpecMethod: "medusa", SpecTree: 2}, "at least 4"},
		{Config{SpecK: 4, SpecAlpha: 0.8, SpecAlphas: []float64{0.9}}, "not both"},
		{Config{SpecK: 4, SpecAlphas: []float64{0.9, 1.5}}, "SpecAlphas[1]"},
		{Config{SpecK: 4, SpecRepetition: map[string]float64{"": 0.5}}, "ngram method only"},
		{Config{SpecK: 4, SpecMethod: "ngram", SpecRepetition: map[string]float64{"rag": 2}}, `"rag"`},
	} {
		_, err := tc.cfg.resolve()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.cfg, err, tc.want)
		}
	}
}

func TestParseSpecFlags(t *testing.T) {
	if a, err := ParseSpecAlphas("0.9, 0.8,0.7"); err != nil || len(a) != 3 || a[2] != 0.7 {
		t.Fatalf("ParseSpecAlphas: %v %v", a, err)
	}
	for _, bad := range []string{"", "1.2", "0.5,x", "NaN", "0.5abc"} {
		if _, err := ParseSpecAlphas(bad); err == nil {
			t.Errorf("ParseSpecAlphas(%q): no error", bad)
		}
	}
	m, err := ParseSpecRepetition("rag=0.8, code=0.6,0.3")
	if err != nil || m["rag"] != 0.8 || m["code"] != 0.6 || m[""] != 0.3 {
		t.Fatalf("ParseSpecRepetition: %v %v", m, err)
	}
	if s := FormatSpecRepetition(m); s != "code=0.6,rag=0.8,0.3" {
		t.Fatalf("FormatSpecRepetition: %q", s)
	}
	for _, bad := range []string{"rag=", "rag=1.1", "0.3,0.4", "a=0.1,a=0.2", "=x", "rag=0.5x"} {
		if _, err := ParseSpecRepetition(bad); err == nil {
			t.Errorf("ParseSpecRepetition(%q): no error", bad)
		}
	}
}

func FuzzParseSpecRepetition(f *testing.F) {
	for _, s := range []string{"0.5", "rag=0.8,code=0.6,0.3", "=0.5", "a=b=0.5", ",", "x=1e-300", "rag=0x1p-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		m, err := ParseSpecRepetition(spec)
		if err != nil {
			if len(err.Error()) > 300 {
				t.Fatalf("error of %d bytes for a %d-byte spec", len(err.Error()), len(spec))
			}
			return
		}
		again, err := ParseSpecRepetition(FormatSpecRepetition(m))
		if err != nil || len(again) != len(m) {
			t.Fatalf("%q parsed to %v, whose form %q gives %v, %v", spec, m, FormatSpecRepetition(m), again, err)
		}
		for k, v := range m {
			if again[k] != v || !(v >= 0 && v <= 1) {
				t.Fatalf("%q: class %q: %g, again %g", spec, k, v, again[k])
			}
		}
	})
}

func FuzzParseSpecAlphas(f *testing.F) {
	for _, s := range []string{"0.8", "0.9,0.8,0.7", " 1 ,0", "NaN", "0.5,", "1e-400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		a, err := ParseSpecAlphas(spec)
		if err != nil {
			if len(err.Error()) > 300 {
				t.Fatalf("error of %d bytes for a %d-byte spec", len(err.Error()), len(spec))
			}
			return
		}
		if len(a) != strings.Count(spec, ",")+1 {
			t.Fatalf("%q: %d values", spec, len(a))
		}
		for _, x := range a {
			if !(x >= 0 && x <= 1) {
				t.Fatalf("%q: acceptance %g outside [0, 1]", spec, x)
			}
		}
	})
}
