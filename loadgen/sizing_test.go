package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/tokstub"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

// sizingTrace has prompts of the lengths issue 31 measured (64 to 1,000 tokens), some sharing
// prefix blocks, with token counts only.
func sizingTrace() []traces.Request {
	var reqs []traces.Request
	for i, n := range []int{64, 256, 500, 1000, 37, 64, 700, 129, 900, 300} {
		q := traces.Request{ID: "r" + string(rune('a'+i)), InputTokens: n, OutputTokens: 1}
		if i%3 == 0 && n >= 256 {
			q.HashIDs = []int64{1, int64(10 + i)}
		}
		reqs = append(reqs, q)
	}
	return reqs
}

// stubTokenizer is the tokenizer.json the stub servers count with.
const stubTokenizer = "../tokenizer/testdata/sentencepiece.tokenizer.json"

func newTokStub(t *testing.T, wire string) *tokstub.Server {
	t.Helper()
	s, err := tokstub.New(wire, stubTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runSizing replays sizingTrace against s with --backend backend.
func runSizing(t *testing.T, s *tokstub.Server, api, sizing, backend string) ([]metrics.Record, *Result) {
	t.Helper()
	srv := newServer(t, s.ServeHTTP)
	tg := target(srv.URL)
	tg.Backend, tg.API = backend, api
	var col collector
	res, err := Run(context.Background(), sizingTrace(), Options{Target: tg, Tokenizer: tokenizer.Approx{},
		PromptSizing: sizing, PromptBlockTokens: 128}, col.sink)
	if err != nil {
		t.Fatal(err)
	}
	return col.recs, res
}

// TestSizingOnServerTokenizeIsExact: against servers that count with a real SentencePiece
// tokenizer and serve /tokenize in llama.cpp's, vLLM's and SGLang's formats, every prompt
// synthesized under --prompt-sizing auto reaches the server at exactly the trace's length,
// on completions and on chat (whose template adds tokens), and the record keeps the server's
// count as the input.
func TestSizingOnServerTokenizeIsExact(t *testing.T) {
	for _, wire := range []string{"llamacpp", "vllm", "sglang"} {
		for _, api := range []string{"completions", "chat"} {
			t.Run(wire+"/"+api, func(t *testing.T) {
				s := newTokStub(t, wire)
				recs, res := runSizing(t, s, api, SizingAuto, wire)
				if res.Sizer == nil || res.Sizer.Method != SizingServer || !strings.Contains(res.Sizer.Detail, "exact on 4 sample texts") {
					t.Fatalf("sizer %v, want the server's /tokenize, exact on its samples", res.Sizer)
				}
				if res.Sizer.TokensPerWord < 3 {
					t.Errorf("tokens per word %.2f: the test tokenizer should cost several tokens per reference word", res.Sizer.TokensPerWord)
				}
				// One call per word and filler, 8 pairs, 4 samples, and the two format checks.
				if got, want := s.Tokenizes.Load(), int64(SizingVocab+len(workloads.FillerWords())+8+4+2); got != want {
					t.Errorf("%d /tokenize calls, want %d", got, want)
				}
				for _, r := range recs {
					if !r.OK() {
						t.Fatalf("%s failed: %s %s", r.ID, r.Failure, r.Error)
					}
					if r.ServerInputTokens != r.IntendedInputTokens || r.IntendedInputTokens == 0 {
						t.Errorf("%s: server counted %d prompt tokens, trace asked for %d", r.ID, r.ServerInputTokens, r.IntendedInputTokens)
					}
					if r.InputTokens != r.ServerInputTokens || r.InputSource != metrics.InputFromUsage {
						t.Errorf("%s: input %d from %q, want the server's %d from usage", r.ID, r.InputTokens, r.InputSource, r.ServerInputTokens)
					}
				}
			})
		}
	}
}

// TestSizingOtherFormat: a llama.cpp server benchmarked with --backend vllm refuses vLLM's
// /tokenize body; sizing then asks in llama.cpp's format and is exact all the same.
func TestSizingOtherFormat(t *testing.T) {
	s := newTokStub(t, "llamacpp")
	recs, res := runSizing(t, s, "completions", SizingServer, "vllm")
	if res.Sizer == nil || res.Sizer.Method != SizingServer {
		t.Fatalf("sizer %v", res.Sizer)
	}
	for _, r := range recs {
		if r.ServerInputTokens != r.IntendedInputTokens {
			t.Errorf("%s: server counted %d, trace asked for %d", r.ID, r.ServerInputTokens, r.IntendedInputTokens)
		}
	}
}

// TestSizingDefaultTokenizerIsCaught: without sizing (the approximation fits the prompts),
// the same server counts the prompts several times longer than asked, and the summary's
// input check says so and fails.
func TestSizingDefaultTokenizerIsCaught(t *testing.T) {
	s := newTokStub(t, "vllm")
	s.Ctx = 1 << 20
	recs, res := runSizing(t, s, "completions", SizingTokenizer, "vllm")
	if res.Sizer != nil {
		t.Fatalf("sizer %v with sizing off", res.Sizer)
	}
	sum, err := metrics.Summarize(metrics.SliceSource(recs), metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := sum.Inputs
	if c == nil || !c.Exceeded || c.Difference < 1 || c.Requests != len(recs) {
		t.Fatalf("input check %+v: want the server's count flagged as far beyond the trace's", c)
	}
	if sum.Requests.InputTokens != c.Counted {
		t.Errorf("summary input tokens %d, want the server's %d", sum.Requests.InputTokens, c.Counted)
	}
	if metrics.InputFailure(sum) == "" {
		t.Error("InputFailure is empty for an exceeded check")
	}
}

// TestSizingCalibratesWithoutTokenize: a server without /tokenize is calibrated from probe
// requests' usage; the run's total is then within the default tolerance, and auto says so.
func TestSizingCalibratesWithoutTokenize(t *testing.T) {
	for _, api := range []string{"completions", "chat"} {
		t.Run(api, func(t *testing.T) {
			s := newTokStub(t, "sglang")
			s.NoTokenize = true
			recs, res := runSizing(t, s, api, SizingAuto, "sglang")
			if res.Sizer == nil || res.Sizer.Method != SizingCalibrate || !strings.Contains(res.Sizer.Detail, "/tokenize unusable") {
				t.Fatalf("sizer %v, want calibration", res.Sizer)
			}
			if got := s.Probes.Load(); got != 4 {
				t.Errorf("%d probe requests, want 4", got)
			}
			sum, err := metrics.Summarize(metrics.SliceSource(recs), metrics.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c := sum.Inputs; c == nil || c.Exceeded || c.Requests != len(recs) {
				t.Fatalf("input check %+v: want the calibrated prompts within %.0f%%", c, 100*metrics.DefaultInputTolerance)
			}
		})
	}
}

// TestSizingServerNeedsTokenize: --prompt-sizing server against a server without /tokenize
// refuses to start, and says what to do.
func TestSizingServerNeedsTokenize(t *testing.T) {
	s := newTokStub(t, "vllm")
	s.NoTokenize = true
	srv := newServer(t, s.ServeHTTP)
	_, err := Run(context.Background(), sizingTrace(), Options{Target: target(srv.URL), PromptSizing: SizingServer}, nil)
	if err == nil || !strings.Contains(err.Error(), "/tokenize") || !strings.Contains(err.Error(), "--tokenizer") {
		t.Fatalf("err %v, want a refusal naming /tokenize and --tokenizer", err)
	}
	if _, err := Run(context.Background(), sizingTrace(), Options{Target: target(srv.URL), PromptSizing: "guess"}, nil); err == nil || !strings.Contains(err.Error(), "auto") {
		t.Fatalf("err %v, want the modes listed", err)
	}
}

// TestSizerReusedAcrossRuns: a Sizer measured once serves later runs without asking again.
func TestSizerReusedAcrossRuns(t *testing.T) {
	s := newTokStub(t, "llamacpp")
	srv := newServer(t, s.ServeHTTP)
	tg := target(srv.URL)
	tg.Backend = "llamacpp"
	sz, err := MeasureSizing(context.Background(), Options{Target: tg, PromptSizing: SizingServer})
	if err != nil {
		t.Fatal(err)
	}
	before := s.Tokenizes.Load()
	var col collector
	if _, err := Run(context.Background(), sizingTrace(), Options{Target: tg, Sizer: sz, PromptSizing: SizingServer}, col.sink); err != nil {
		t.Fatal(err)
	}
	if s.Tokenizes.Load() != before {
		t.Errorf("the run asked /tokenize again (%d calls after %d)", s.Tokenizes.Load(), before)
	}
	for _, r := range col.recs {
		if r.ServerInputTokens != r.IntendedInputTokens {
			t.Errorf("%s: %d counted, %d intended", r.ID, r.ServerInputTokens, r.IntendedInputTokens)
		}
	}
}

// TestContextLengthKeepsKind: each server's context-length refusal becomes the
// context_length kind with its type, and the prompt and context sizes it reported.
func TestContextLengthKeepsKind(t *testing.T) {
	for _, tc := range []struct{ wire, typ string }{
		{"llamacpp", "exceed_context_size_error"}, {"vllm", "BadRequestError"}, {"sglang", "BadRequestError"},
	} {
		t.Run(tc.wire, func(t *testing.T) {
			s := newTokStub(t, tc.wire)
			s.Ctx = 200
			srv := newServer(t, s.ServeHTTP)
			tg := target(srv.URL)
			tg.Backend = tc.wire
			req := traces.Request{ID: "long", Prompt: tokenizer.Text(3, 0, 100), OutputTokens: 4}
			want := s.Count(req.Prompt)
			rec := runOne(t, Options{Target: tg}, req)
			if rec.Failure != metrics.FailContextLength || rec.Status != 400 {
				t.Fatalf("failure %q status %d (%s), want context_length", rec.Failure, rec.Status, rec.Error)
			}
			if rec.ErrorType != tc.typ || rec.ErrorPromptTokens != want || rec.ErrorContextTokens != 200 {
				t.Errorf("type %q prompt %d context %d, want %q %d 200", rec.ErrorType, rec.ErrorPromptTokens, rec.ErrorContextTokens, tc.typ, want)
			}
			if rec.InputSource != metrics.InputFromTrace {
				t.Errorf("input source %q, want trace (no usage on a refusal)", rec.InputSource)
			}
		})
	}
}

// TestSizerFitsFractionalCosts: a calibrated cost per word below or above one still fits a
// prompt to its exact count under the sizer (the prompt fitter's word bound must not assume
// a word is at least one token).
func TestSizerFitsFractionalCosts(t *testing.T) {
	words := sizingWords(SizingVocab)
	for _, per := range []float64{0.8, 0.997, 1.25, 2.6} {
		cost := make([]float64, len(words))
		for i := range cost {
			cost[i] = per
		}
		s := newSizer(SizingCalibrate, "", words, cost, 0)
		p := workloads.NewPrompterWords(s.costs, 1, 128, words)
		for _, n := range []int{1, 37, 64, 500, 1000} {
			q := &traces.Request{ID: "x", InputTokens: n, HashIDs: []int64{4, 5}}
			// With a mean cost above one some counts cannot be reached by whole words, and
			// the fitter may stop one word short; never above.
			if got := s.costs.Count(p.Text(q)); got > n || (per <= 1 && got != n) || n-got > int(per+0.5) {
				t.Errorf("per %.3f: %d tokens fitted to %d", per, got, n)
			}
		}
	}
}

// TestSizingHostileServer: /tokenize answers and probe usage that make no sense stop a run
// that asked for that sizing before it sends anything, with an error that says so; auto falls
// back to the run's tokenizer and says why. Nothing panics or hangs.
func TestSizingHostileServer(t *testing.T) {
	for _, tc := range []struct {
		name, mode, tokenize, usage string
		want                        string
	}{
		{"count out of range", SizingServer, `{"count":99999999999}`, `null`, "out of range"},
		{"not JSON", SizingServer, `<html>busy</html>`, `null`, "not a tokenize response"},
		{"constant counts", SizingServer, `{"count":1}`, `null`, "does not read the text"},
		{"counts by length, then a huge overhead", SizingServer, "bytes", `{"prompt_tokens":100000,"completion_tokens":1}`, "not a usable overhead"},
		{"absurd usage", SizingCalibrate, ``, `{"prompt_tokens":2000000000,"completion_tokens":1}`, "no usable usage.prompt_tokens"},
		{"constant usage", SizingCalibrate, ``, `{"prompt_tokens":1000,"completion_tokens":1}`, "no usable cost per word"},
		{"auto falls back", SizingAuto, `{"count":99999999999}`, `null`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.URL.Path == "/tokenize" {
					if tc.tokenize == "bytes" { // one token per byte of the prompt
						var body struct{ Prompt string }
						_ = json.NewDecoder(r.Body).Decode(&body)
						_, _ = fmt.Fprintf(w, `{"count":%d}`, len(body.Prompt))
						return
					}
					_, _ = io.WriteString(w, tc.tokenize)
					return
				}
				_, _ = io.WriteString(w, `{"id":"x","choices":[{"index":0,"text":" ok","finish_reason":"length"}],"usage":`+tc.usage+`}`)
			})
			tg := target(srv.URL)
			tg.Stream = false
			var col collector
			res, err := Run(context.Background(), sizingTrace(), Options{Target: tg, PromptSizing: tc.mode, Tokenizer: tokenizer.Approx{}}, col.sink)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--tokenizer") {
					t.Fatalf("err %v, want one naming %q and --tokenizer", err, tc.want)
				}
				return
			}
			if err != nil || res.Sizer == nil || res.Sizer.Method != SizingTokenizer || !strings.Contains(res.Sizer.Detail, "prompts fitted with approx") ||
				len(col.recs) != len(sizingTrace()) {
				t.Fatalf("err %v, sizer %v, %d records: want the run to fall back to approx and say why", err, res.Sizer, len(col.recs))
			}
			if r := col.recs[0]; r.IntendedInputTokens != r.InputTokens || r.InputSource != metrics.InputFromTrace {
				t.Errorf("record %+v: want the trace's count without usage", r)
			}
		})
	}
}
