package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/internal/pipenet"
	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
	"github.com/llmbench/llmbench/runner/engineadapter"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// apiCell is one cell of the API matrix (the sibling of TestWireMatrix for the Responses,
// Messages and embeddings APIs).
type apiCell struct {
	api      string
	spec     bool
	tok      bool
	noStream bool
	batch    int
	key      string // the engine's API key ("" none)
}

func (c apiCell) String() string {
	return fmt.Sprintf("%s/spec=%v/tokenizer=%v/stream=%v/batch=%d", c.api, c.spec, c.tok, !c.noStream, c.batch)
}

// runVirtualAPI replays reqs with c's API against the reference engine on virtual time (inside
// a synctest bubble). seen, when set, sees every request's headers.
func runVirtualAPI(t *testing.T, c apiCell, reqs []traces.Request, extra func(*refengine.Config), seen func(http.Header)) ([]metrics.Record, *refengine.Engine, func()) {
	t.Helper()
	cfg := refengine.Config{Seed: 7, Clock: &bubbleClock{epoch: time.Now()}, APIKey: c.key}
	if c.spec {
		cfg.SpecK, cfg.SpecAlpha = 4, 0.8
	}
	if extra != nil {
		extra(&cfg)
	}
	eng, err := refengine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln := pipenet.New()
	h := eng.Handler()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen != nil {
			seen(r.Header)
		}
		h.ServeHTTP(w, r)
	})}
	served := make(chan struct{})
	go func() {
		srv.Serve(ln)
		close(served)
	}()
	stop := func() {
		srv.Close()
		<-served
		eng.Close()
	}
	lo := loadgen.Options{
		Target: loadgen.Target{URL: "http://engine", Model: eng.ServedModelName(), Backend: "vllm", API: c.api,
			Stream: !c.noStream, BatchSize: c.batch, APIKey: c.key},
		Seed: 1, Grace: time.Second, Clock: loadClock{}, Dial: ln.Dial,
	}
	if c.tok {
		lo.Tokenizer = tokenizer.Reference{}
	}
	var mu sync.Mutex
	var recs []metrics.Record
	sink := func(r *metrics.Record) {
		mu.Lock()
		defer mu.Unlock()
		cp := *r
		cp.Chunks = append([]metrics.Chunk(nil), r.Chunks...)
		recs = append(recs, cp)
	}
	if _, err := loadgen.Run(context.Background(), reqs, lo, sink); err != nil {
		stop()
		t.Fatal(err)
	}
	return recs, eng, stop
}

func timeline(t *testing.T, eng *refengine.Engine, id string) refengine.Timeline {
	t.Helper()
	tl, ok := eng.Timeline(id)
	if !ok || len(tl.Emissions) == 0 {
		t.Fatalf("no ground truth for %s", id)
	}
	return tl
}

// TestAPIMatrix runs the Responses and Messages APIs × speculative decoding on/off ×
// tokenizer or not × streamed or not on virtual time and holds every record to the engine's
// ground truth, as TestWireMatrix does for completions and chat: output and prompt tokens
// exactly from the usage each API reports (response.completed's usage; message_start's
// input_tokens and message_delta's output_tokens), TTFT, decode time and the gaps between
// deliveries equal to the engine's emissions (events that carry no text — response.created,
// message_start, ping, content_block_start — never count as the first token), and a
// non-streamed response's end-to-end latency equal to the engine's last emission.
func TestAPIMatrix(t *testing.T) {
	var reqs []traces.Request
	for i := 0; i < 3; i++ {
		reqs = append(reqs, traces.Request{ID: fmt.Sprint("a", i), Arrival: time.Duration(i) * 15 * time.Millisecond, InputTokens: 40, OutputTokens: 24})
	}
	const eps = float64(time.Microsecond)
	for _, api := range []string{"responses", "messages"} {
		for _, spec := range []bool{false, true} {
			for _, tok := range []bool{false, true} {
				for _, noStream := range []bool{false, true} {
					c := apiCell{api: api, spec: spec, tok: tok, noStream: noStream}
					t.Run(c.String(), func(t *testing.T) {
						synctest.Test(t, func(t *testing.T) {
							recs, eng, stop := runVirtualAPI(t, c, reqs, nil, nil)
							defer stop()
							if len(recs) != len(reqs) {
								t.Fatalf("%d records for %d requests", len(recs), len(reqs))
							}
							for _, r := range recs {
								if !r.OK() {
									t.Fatalf("%s failed: %s %s", r.ID, r.Failure, r.Error)
								}
								tl := timeline(t, eng, r.ID)
								if r.OutputTokens != tl.OutputTokens || r.ServerOutputTokens != tl.OutputTokens ||
									r.ServerInputTokens != tl.PromptTokens || r.TokenSource != metrics.TokensFromUsage {
									t.Errorf("%s: output %d (server %d, %s), server input %d; engine %d output, %d prompt",
										r.ID, r.OutputTokens, r.ServerOutputTokens, r.TokenSource, r.ServerInputTokens, tl.OutputTokens, tl.PromptTokens)
								}
								if !strings.HasPrefix(r.ResponseID, map[string]string{"responses": "resp_", "messages": "msg_"}[api]) {
									t.Errorf("%s: response id %q", r.ID, r.ResponseID)
								}
								last := tl.Emissions[len(tl.Emissions)-1].At
								if noStream {
									if got, want := float64(r.End-r.Sent), float64(last-tl.Arrival); math.Abs(got-want) > eps {
										t.Errorf("%s: end-to-end %.3f ms, engine %.3f ms", r.ID, got/1e6, want/1e6)
									}
									continue
								}
								sum := 0
								for _, ch := range r.Chunks {
									sum += int(ch.Tokens)
								}
								if sum != r.OutputTokens {
									t.Errorf("%s: chunks sum to %d, output tokens %d", r.ID, sum, r.OutputTokens)
								}
								gtTTFT := float64(tl.Emissions[0].At - tl.Arrival)
								ttft, decode := float64(r.FirstToken-r.Sent), float64(r.Chunks[len(r.Chunks)-1].T-r.FirstToken)
								if math.Abs(ttft-gtTTFT) > eps || math.Abs(decode-float64(last-tl.Emissions[0].At)) > eps {
									t.Errorf("%s: TTFT %.3f / decode %.3f ms, engine %.3f / %.3f ms", r.ID, ttft/1e6, decode/1e6, gtTTFT/1e6, float64(last-tl.Emissions[0].At)/1e6)
								}
								if len(r.Chunks) != len(tl.Emissions) {
									t.Fatalf("%s: %d chunks for %d engine emissions", r.ID, len(r.Chunks), len(tl.Emissions))
								}
								for i := 1; i < len(r.Chunks); i++ {
									got, want := float64(r.Chunks[i].T-r.Chunks[i-1].T), float64(tl.Emissions[i].At-tl.Emissions[i-1].At)
									if math.Abs(got-want) > eps {
										t.Errorf("%s: gap %d %.3f ms, engine %.3f ms", r.ID, i, got/1e6, want/1e6)
										break
									}
								}
							}
						})
					})
				}
			}
		}
	}
}

// TestEmbeddingsBatches: --api embeddings with batch sizes 1, 3 and 4 over 8 requests sends
// ceil(8/B) calls; each record's prompt tokens are the server's usage.prompt_tokens and equal
// the engine's count over the batch's inputs and the trace's summed input tokens, its latency
// (from sending to the whole response) the engine's time to finish the last input's prefill,
// and the batch is sent when its last request arrives.
func TestEmbeddingsBatches(t *testing.T) {
	var reqs []traces.Request
	for i := 0; i < 8; i++ {
		reqs = append(reqs, traces.Request{ID: fmt.Sprint("e", i), Arrival: time.Duration(i) * 10 * time.Millisecond, InputTokens: 30 + 7*i, OutputTokens: 1})
	}
	for _, b := range []int{1, 3, 4} {
		for _, tok := range []bool{false, true} {
			c := apiCell{api: "embeddings", batch: b, tok: tok}
			t.Run(c.String(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					recs, eng, stop := runVirtualAPI(t, c, reqs, nil, nil)
					defer stop()
					if want := (len(reqs) + b - 1) / b; len(recs) != want {
						t.Fatalf("%d records, want %d batches", len(recs), want)
					}
					for _, r := range recs {
						if !r.OK() {
							t.Fatalf("%s failed: %s %s", r.ID, r.Failure, r.Error)
						}
						first, _ := strconv.Atoi(strings.TrimPrefix(r.ID, "e"))
						n := min(b, len(reqs)-first)
						wantIn := 0
						var arrival, ready time.Duration
						for i := 0; i < n; i++ {
							id := r.ID
							if i > 0 {
								id += "/" + strconv.Itoa(i)
							}
							tl := timeline(t, eng, id)
							wantIn += reqs[first+i].InputTokens
							if tl.PromptTokens != reqs[first+i].InputTokens {
								t.Errorf("%s: engine counted %d tokens, trace %d", id, tl.PromptTokens, reqs[first+i].InputTokens)
							}
							arrival, ready = tl.Arrival, max(ready, tl.Emissions[0].At)
						}
						if r.ServerInputTokens != wantIn || r.InputTokens != wantIn || r.TokenSource != metrics.TokensFromUsage || r.OutputTokens != 0 {
							t.Errorf("%s: input %d (server %d, %s), output %d; want %d", r.ID, r.InputTokens, r.ServerInputTokens, r.TokenSource, r.OutputTokens, wantIn)
						}
						if got, want := r.End-r.Sent, int64(ready-arrival); math.Abs(float64(got-want)) > float64(time.Microsecond) {
							t.Errorf("%s: latency %v, engine %v", r.ID, time.Duration(got), time.Duration(want))
						}
						if want := int64(reqs[first+n-1].Arrival); r.Intended != want {
							t.Errorf("%s: intended at %v, want its last request's arrival %v", r.ID, time.Duration(r.Intended), time.Duration(want))
						}
					}
				})
			})
		}
	}
}

// TestImagesPriceTTFT: a chat, Responses or Messages request with images is priced by the
// engine's vision rule (perf.DefaultVision: a 1024×768 image is 4 tiles of 512 px, 85 + 4·170
// = 765 tokens); the server's prompt count is the text's plus the images', the client sends
// each as its API's image part, and TTFT grows with the images as the engine's ground truth
// says. Identical images are one prefix for the engine's cache: the second request with the
// same image and text finds its prompt cached.
func TestImagesPriceTTFT(t *testing.T) {
	const text = "Describe this picture in detail."
	textTokens := tokenizer.Reference{}.Count(text)
	img := traces.Image{Width: 1024, Height: 768}
	if got := perf.DefaultVision.ImageTokens(1024, 768); got != 765 {
		t.Fatalf("rule: 1024x768 is %d tokens, want 765", got)
	}
	for _, api := range []string{"chat", "responses", "messages"} {
		t.Run(api, func(t *testing.T) {
			var ttft [3]int64
			for n := 0; n <= 2; n++ {
				reqs := []traces.Request{{ID: "i", InputTokens: textTokens, OutputTokens: 8,
					Messages: []traces.Message{{Role: "user", Content: text, Images: slicesRepeat(img, n)}}}}
				synctest.Test(t, func(t *testing.T) {
					recs, eng, stop := runVirtualAPI(t, apiCell{api: api}, reqs, nil, nil)
					defer stop()
					r := recs[0]
					if !r.OK() {
						t.Fatalf("%d images: %s %s", n, r.Failure, r.Error)
					}
					tl := timeline(t, eng, "i")
					if want := textTokens + 765*n; r.ServerInputTokens != want || tl.PromptTokens != want {
						t.Errorf("%d images: server prompt %d, engine %d, want %d", n, r.ServerInputTokens, tl.PromptTokens, want)
					}
					ttft[n] = r.FirstToken - r.Sent
					if gt := int64(tl.Emissions[0].At - tl.Arrival); math.Abs(float64(ttft[n]-gt)) > float64(time.Microsecond) {
						t.Errorf("%d images: TTFT %v, engine %v", n, time.Duration(ttft[n]), time.Duration(gt))
					}
				})
			}
			t.Logf("TTFT with 0, 1, 2 images of 1024x768: %v, %v, %v", time.Duration(ttft[0]), time.Duration(ttft[1]), time.Duration(ttft[2]))
			if !(ttft[0] < ttft[1] && ttft[1] < ttft[2]) {
				t.Errorf("TTFT with 0, 1, 2 images: %v %v %v; want it to grow", time.Duration(ttft[0]), time.Duration(ttft[1]), time.Duration(ttft[2]))
			}
		})
	}
	t.Run("prefix cache", func(t *testing.T) {
		msg := []traces.Message{{Role: "user", Content: text, Images: []traces.Image{img}}}
		reqs := []traces.Request{{ID: "p1", InputTokens: textTokens, OutputTokens: 4, Messages: msg},
			{ID: "p2", Arrival: 200 * time.Millisecond, InputTokens: textTokens, OutputTokens: 4, Messages: msg}}
		synctest.Test(t, func(t *testing.T) {
			recs, eng, stop := runVirtualAPI(t, apiCell{api: "chat"}, reqs, nil, nil)
			defer stop()
			for _, r := range recs {
				if !r.OK() {
					t.Fatalf("%s: %s %s", r.ID, r.Failure, r.Error)
				}
			}
			if tl := timeline(t, eng, "p2"); tl.CachedTokens < 765 {
				t.Errorf("the second request found %d tokens cached, want at least the image's 765", tl.CachedTokens)
			}
		})
	})
}

func slicesRepeat(im traces.Image, n int) []traces.Image {
	var out []traces.Image
	for range n {
		out = append(out, im)
	}
	return out
}

// TestAPIErrorsAndKeys: an error that ends a started Responses or Messages stream (the
// engine's error-mid fault: an "error" event) is server_error with the server's message,
// keeping the tokens before it; a 4xx carries Anthropic's error message; with --api messages
// the key goes in x-api-key (the engine refuses the request without it) and no Authorization
// header is sent.
func TestAPIErrorsAndKeys(t *testing.T) {
	reqs := []traces.Request{{ID: "x", InputTokens: 16, OutputTokens: 32}}
	for _, api := range []string{"responses", "messages"} {
		t.Run(api+"/error-mid", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				recs, eng, stop := runVirtualAPI(t, apiCell{api: api}, reqs, func(cfg *refengine.Config) {
					f, err := refengine.ParseFaults("error-mid=1")
					if err != nil {
						t.Fatal(err)
					}
					cfg.Faults = f
				}, nil)
				defer stop()
				r := recs[0]
				if eng.FaultsInjected()["error-mid"] != 1 || r.Failure != metrics.FailServerError ||
					!strings.Contains(r.Error, "the engine failed while generating") || len(r.Chunks) == 0 {
					t.Fatalf("failure %q error %q, %d chunks", r.Failure, r.Error, len(r.Chunks))
				}
			})
		})
	}
	t.Run("messages/x-api-key", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			var auth, xkey, version string
			recs, _, stop := runVirtualAPI(t, apiCell{api: "messages", key: "sk-test-123"}, reqs, nil, func(h http.Header) {
				mu.Lock()
				defer mu.Unlock()
				if h.Get("Anthropic-Version") != "" {
					auth, xkey, version = h.Get("Authorization"), h.Get("X-Api-Key"), h.Get("Anthropic-Version")
				}
			})
			defer stop()
			if !recs[0].OK() || auth != "" || xkey != "sk-test-123" || version != "2023-06-01" {
				t.Fatalf("record %s %s; Authorization %q, x-api-key %q, anthropic-version %q", recs[0].Failure, recs[0].Error, auth, xkey, version)
			}
		})
	})
	t.Run("messages/4xx", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			long := []traces.Request{{ID: "big", InputTokens: 16, OutputTokens: 1 << 20}}
			recs, _, stop := runVirtualAPI(t, apiCell{api: "messages"}, long, nil, nil)
			defer stop()
			// A refusal for length keeps its kind and numbers (issue 31), whatever the API.
			if r := recs[0]; r.Failure != metrics.FailContextLength || r.Status != 400 || !strings.Contains(r.Error, "maximum context length") ||
				r.ErrorContextTokens != 131072 || r.ErrorPromptTokens != 16 || r.ErrorType != "invalid_request_error" {
				t.Fatalf("failure %q status %d error %q type %q prompt %d context %d", r.Failure, r.Status, r.Error, r.ErrorType, r.ErrorPromptTokens, r.ErrorContextTokens)
			}
		})
	})
}

// imagesBothWays runs the one request of reqs over HTTP on the virtual clock and simulated,
// checks that both give the same prompt tokens and TTFT, and returns the prompt tokens.
func imagesBothWays(t *testing.T, reqs []traces.Request) int {
	t.Helper()
	var httpPrompt int
	var httpTTFT int64
	synctest.Test(t, func(t *testing.T) {
		recs, eng, stop := runVirtualAPI(t, apiCell{api: "chat"}, reqs, nil, nil)
		defer stop()
		if !recs[0].OK() {
			t.Fatalf("over HTTP: %s %s", recs[0].Failure, recs[0].Error)
		}
		tl := timeline(t, eng, reqs[0].ID)
		if recs[0].ServerInputTokens != tl.PromptTokens {
			t.Errorf("over HTTP: server usage %d, engine prompt %d", recs[0].ServerInputTokens, tl.PromptTokens)
		}
		httpTTFT, httpPrompt = int64(tl.Emissions[0].At-tl.Arrival), tl.PromptTokens
	})
	s := engineadapter.Simulator{Config: refengine.Config{Seed: 7}, RateScale: 1}
	var recs []metrics.Record
	if _, err := s.Produce(context.Background(), traces.FromSlice(reqs), func(r *metrics.Record) { recs = append(recs, *r) }); err != nil {
		t.Fatal(err)
	}
	sim := recs[0]
	if !sim.OK() || sim.ServerInputTokens != httpPrompt || sim.FirstToken-sim.Intended != httpTTFT {
		t.Errorf("simulate: %s %s, %d prompt tokens, TTFT %v; over HTTP %d, %v", sim.Failure, sim.Error, sim.ServerInputTokens, time.Duration(sim.FirstToken-sim.Intended), httpPrompt, time.Duration(httpTTFT))
	}
	return httpPrompt
}

// TestSimulateImagesAgree: simulate prices a trace's images as the engine does over HTTP: a
// request with text and two synthetic images has the same prompt count and the same TTFT on
// the virtual clock (engineadapter reads the sizes from the trace).
func TestSimulateImagesAgree(t *testing.T) {
	const text = "Compare the two pictures."
	reqs := []traces.Request{{ID: "s", InputTokens: tokenizer.Reference{}.Count(text), OutputTokens: 6,
		Messages: []traces.Message{{Role: "user", Content: text, Images: []traces.Image{{Width: 1280, Height: 720}, {Width: 640, Height: 480}}}}}}
	if prompt := imagesBothWays(t, reqs); prompt != reqs[0].InputTokens+85+6*170+85+2*170 {
		t.Errorf("prompt %d tokens, want %d", prompt, reqs[0].InputTokens+85+6*170+85+2*170)
	}
}

// TestWebPImagesAreRead: WebP images (a lossy VP8 and a lossless VP8L file, made with cwebp)
// are sent with their media type, sized from their headers by the engine over HTTP and by
// simulate, and priced by the vision rule; both agree on the prompt and the TTFT.
func TestWebPImagesAreRead(t *testing.T) {
	const text = "What differs between these?"
	imgs := []traces.Image{{Path: "testdata/images/lossy-1024x768.webp"}, {Path: "testdata/images/lossless-640x480.webp"}}
	reqs := []traces.Request{{ID: "w", InputTokens: tokenizer.Reference{}.Count(text), OutputTokens: 4,
		Messages: []traces.Message{{Role: "user", Content: text, Images: imgs}}}}
	want := reqs[0].InputTokens + perf.DefaultVision.ImageTokens(1024, 768) + perf.DefaultVision.ImageTokens(640, 480)
	if prompt := imagesBothWays(t, reqs); prompt != want {
		t.Errorf("prompt %d tokens, want %d", prompt, want)
	}
}

// TestAPIReasoning: with the engine's reasoning mode the Responses API streams a reasoning
// item (response.reasoning_text.delta) before the message and reports
// output_tokens_details.reasoning_tokens; the Messages API streams a thinking block
// (thinking_delta) before the text block. The harness separates the phases: reasoning tokens
// match the engine's (from usage for Responses; from the tokenizer's split of the total for
// Messages, which reports no reasoning count), and the time to the first answer token is when
// the engine sent it.
func TestAPIReasoning(t *testing.T) {
	var reqs []traces.Request
	for i := 0; i < 3; i++ {
		reqs = append(reqs, traces.Request{ID: fmt.Sprint("q", i), Arrival: time.Duration(i) * 10 * time.Millisecond, InputTokens: 32, OutputTokens: 40})
	}
	const frac, want = 0.25, 10 // of 40 tokens
	for _, c := range []apiCell{{api: "responses"}, {api: "responses", spec: true}, {api: "messages", tok: true}, {api: "messages", spec: true, tok: true}, {api: "responses", noStream: true}} {
		t.Run(c.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				recs, eng, stop := runVirtualAPI(t, c, reqs, func(cfg *refengine.Config) { cfg.ReasoningFraction = frac }, nil)
				defer stop()
				for _, r := range recs {
					if !r.OK() {
						t.Fatalf("%s: %s %s", r.ID, r.Failure, r.Error)
					}
					tl := timeline(t, eng, r.ID)
					if r.OutputTokens != tl.OutputTokens || r.ReasoningTokens != want {
						t.Errorf("%s: %d output / %d reasoning tokens, engine %d / %d", r.ID, r.OutputTokens, r.ReasoningTokens, tl.OutputTokens, want)
					}
					if c.noStream {
						continue
					}
					k, seen := 0, 0
					for seen+tl.Emissions[k].Tokens <= want {
						seen += tl.Emissions[k].Tokens
						k++
					}
					if got, gt := float64(r.FirstAnswer-r.Sent), float64(tl.Emissions[k].At-tl.Arrival); math.Abs(got-gt) > float64(time.Microsecond) || !(r.FirstAnswer > r.FirstToken) {
						t.Errorf("%s: first answer at %.3f ms (first token %.3f), engine sent it at %.3f ms", r.ID, got/1e6, float64(r.FirstToken-r.Sent)/1e6, gt/1e6)
					}
				}
			})
		})
	}
}
