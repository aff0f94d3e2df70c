package main

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/tokstub"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
)

// inputsTrace writes a trace of prompts from 37 to 1,000 tokens (issue 31's lengths) with
// token counts only, 50 ms apart, and returns its path and the total input tokens.
func inputsTrace(t *testing.T) (string, int64) {
	t.Helper()
	var b strings.Builder
	var total int64
	for i, n := range []int{64, 256, 500, 1000, 37, 64, 700, 129} {
		fmt.Fprintf(&b, `{"id":"q%d","arrival_s":%.2f,"input_tokens":%d,"output_tokens":1}`+"\n", i, 0.05*float64(i), n)
		total += int64(n)
	}
	path := filepath.Join(t.TempDir(), "inputs.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, total
}

// startTokStub serves a tokstub.Server for wire with a context of ctx tokens.
func startTokStub(t *testing.T, wire string, ctx int) *httptest.Server {
	t.Helper()
	s, err := tokstub.New(wire, "../../tokenizer/testdata/sentencepiece.tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	s.Ctx = ctx
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

// TestRunInputsOnServerTokenizer: against servers that count with a real SentencePiece
// tokenizer (llama.cpp's, vLLM's and SGLang's /tokenize and usage), a default run sizes the
// prompts on the server, which counts exactly the trace's input tokens; the summary's input
// total is the server's count and says where it came from and how prompts were sized.
func TestRunInputsOnServerTokenizer(t *testing.T) {
	trace, total := inputsTrace(t)
	for _, wire := range []string{"llamacpp", "vllm", "sglang"} {
		t.Run(wire, func(t *testing.T) {
			srv := startTokStub(t, wire, 4096)
			out := filepath.Join(t.TempDir(), "out")
			app := newTestApp(nil)
			mustRun(t, app, "run", "--trace", trace, "--endpoint", srv.URL, "--backend", wire, "--model", "m", "--out", out, "--no-progress")
			s := readSummaryStruct(t, out)
			c := s.Inputs
			if c == nil || c.Requests != 8 || c.Intended != total || c.Counted != total || c.Exceeded {
				t.Fatalf("inputs %+v, want all 8 prompts counted at the trace's %d tokens", c, total)
			}
			if s.Requests.InputTokens != total || s.Requests.InputSource[metrics.InputFromUsage] != 8 {
				t.Errorf("input tokens %d from %v, want the server's %d from usage", s.Requests.InputTokens, s.Requests.InputSource, total)
			}
			if !strings.HasPrefix(s.Run.PromptSizing, "server: word costs from the server's /tokenize") {
				t.Errorf("prompt sizing %q", s.Run.PromptSizing)
			}
			t.Logf("%s: intended %d, server counted %d; %s", wire, c.Intended, c.Counted, s.Run.PromptSizing)
			if o := app.out.String(); !strings.Contains(o, "Inputs      intended 2,750 · server counted 2,750 (+0.0%") || !strings.Contains(o, "sized") {
				t.Errorf("the terminal summary has no Inputs line:\n%s", app.out.String())
			}
		})
	}
}

// TestRunInputsMismatchFails: with sizing left to the approximation, the same server counts
// the prompts several times longer; the run exits 3 and the summary flags it.
func TestRunInputsMismatchFails(t *testing.T) {
	trace, total := inputsTrace(t)
	srv := startTokStub(t, "vllm", 1<<20)
	out := filepath.Join(t.TempDir(), "out")
	app := newTestApp(nil)
	code := app.cli("run", "--trace", trace, "--endpoint", srv.URL, "--model", "m", "--out", out, "--no-progress",
		"--prompt-sizing", "tokenizer", "--tokenizer", "approx")
	if code != exitRunFailed || !strings.Contains(app.err.String(), "prompt tokens where the trace asked for") {
		t.Fatalf("exit %d, stderr %q: want 3 naming the prompt tokens", code, app.err.String())
	}
	s := readSummaryStruct(t, out)
	if s.Inputs == nil || !s.Inputs.Exceeded || s.Inputs.Intended != total || s.Inputs.Counted < 2*total {
		t.Fatalf("inputs %+v", s.Inputs)
	}
	t.Logf("approx-sized: intended %d, server counted %d (%+.1f%%); exit %d: %s", s.Inputs.Intended, s.Inputs.Counted, 100*s.Inputs.Difference, code, strings.TrimSpace(app.err.String()))
	found := false
	for _, w := range s.Warnings {
		found = found || strings.HasPrefix(w, "inputs: ")
	}
	if !found {
		t.Errorf("no inputs warning in %q", s.Warnings)
	}
	// A wide tolerance accepts the same run.
	app = newTestApp(nil)
	mustRun(t, app, "run", "--trace", trace, "--endpoint", srv.URL, "--model", "m", "--out", filepath.Join(t.TempDir(), "wide"), "--no-progress",
		"--prompt-sizing", "tokenizer", "--tokenizer", "approx", "--input-tolerance", "100")
}

// TestRunInputsOnEngineWires: the reference engine's llama.cpp, vLLM and SGLang personalities
// have no /tokenize, so auto calibrates from probe requests and the prompts are counted at
// the trace's length; a prompt past the engine's context is the context_length kind on
// every wire.
func TestRunInputsOnEngineWires(t *testing.T) {
	trace, total := inputsTrace(t)
	for _, wire := range []string{"llamacpp", "vllm", "sglang"} {
		t.Run(wire, func(t *testing.T) {
			srv := startRefEngine(t, refengine.Config{Wire: wire, TimeScale: 50, MaxModelLen: 800})
			out := filepath.Join(t.TempDir(), "out")
			app := newTestApp(nil)
			mustRun(t, app, "run", "--trace", trace, "--endpoint", srv.URL, "--backend", wire, "--out", out, "--no-progress")
			s := readSummaryStruct(t, out)
			if !strings.HasPrefix(s.Run.PromptSizing, "calibrate: ") || !strings.Contains(s.Run.PromptSizing, "/tokenize unusable") {
				t.Errorf("prompt sizing %q, want calibration", s.Run.PromptSizing)
			}
			// The 1,000-token prompt is past the context of 800.
			if s.Requests.Failures[string(metrics.FailContextLength)] != 1 || s.Requests.Succeeded != 7 {
				t.Fatalf("requests %+v, want one context_length failure", s.Requests)
			}
			if c := s.Inputs; c == nil || c.Counted != c.Intended || c.Intended != total-1000 {
				t.Errorf("inputs %+v, want the 7 prompts that fit counted at the trace's %d tokens", c, total-1000)
			}
		})
	}
}

// TestSweepSizesOnce: a sweep against an outside server measures the prompt sizing once and
// every load point's prompts reach the server at the trace's length.
func TestSweepSizesOnce(t *testing.T) {
	trace, total := inputsTrace(t)
	s, err := tokstub.New("sglang", "../../tokenizer/testdata/sentencepiece.tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	out := filepath.Join(t.TempDir(), "sweep")
	app := newTestApp(nil)
	mustRun(t, app, "sweep", "--trace", trace, "--endpoint", srv.URL, "--backend", "sglang", "--model", "m", "--slo", "ttft=10s",
		"--points", "2,4", "--min-duration", "0", "--out", out, "--no-progress")
	if got, want := s.Tokenizes.Load(), int64(582); got != want {
		t.Errorf("%d /tokenize calls, want one sizing (%d)", got, want)
	}
	sums, _ := filepath.Glob(filepath.Join(out, "*", "summary.json"))
	if len(sums) != 2 {
		t.Fatalf("point summaries %v", sums)
	}
	for _, p := range sums {
		s := readSummaryStruct(t, filepath.Dir(p))
		if c := s.Inputs; c == nil || c.Intended != total || c.Counted != total {
			t.Errorf("%s: inputs %+v, want %d intended and counted", p, c, total)
		}
	}
}

// TestSweepInputMismatchFails: a sweep whose prompts the server counts beyond the tolerance
// exits 3 and names the load.
func TestSweepInputMismatchFails(t *testing.T) {
	trace, _ := inputsTrace(t)
	srv := startTokStub(t, "vllm", 1<<20)
	app := newTestApp(nil)
	code := app.cli("sweep", "--trace", trace, "--endpoint", srv.URL, "--model", "m", "--slo", "ttft=10s", "--points", "2",
		"--min-duration", "0", "--out", filepath.Join(t.TempDir(), "sweep"), "--no-progress", "--prompt-sizing", "tokenizer", "--tokenizer", "approx")
	if code != exitRunFailed || !strings.Contains(app.err.String(), "the sweep failed at load 2") {
		t.Fatalf("exit %d, stderr %q: want 3 naming the load", code, app.err.String())
	}
}

// TestABSizesEachArmOnce: ab measures each outside arm's prompt sizing once, for its warm-up
// and every repeat, and both arms' prompts reach their servers at the trace's length.
func TestABSizesEachArmOnce(t *testing.T) {
	trace, total := inputsTrace(t)
	var stubs []*tokstub.Server
	var urls []string
	for _, wire := range []string{"vllm", "llamacpp"} {
		s, err := tokstub.New(wire, "../../tokenizer/testdata/sentencepiece.tokenizer.json")
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		stubs, urls = append(stubs, s), append(urls, srv.URL)
	}
	out := filepath.Join(t.TempDir(), "ab")
	app := newTestApp(nil)
	mustRun(t, app, "ab", "--trace", trace, "--a-endpoint", urls[0], "--b-endpoint", urls[1], "--model", "m", "--runs", "2",
		"--warmup-requests", "2", "--out", out, "--no-progress")
	// Arm B is llama.cpp under the shared --backend vllm: its sizing first finds that vLLM's
	// /tokenize body is not read (two calls), then uses llama.cpp's.
	for i, want := range []int64{582, 584} {
		if got := stubs[i].Tokenizes.Load(); got != want {
			t.Errorf("arm %d: %d /tokenize calls, want one sizing (%d)", i, got, want)
		}
	}
	sums, _ := filepath.Glob(filepath.Join(out, "*", "summary.json"))
	if len(sums) != 4 {
		t.Fatalf("run summaries %v, want 2 arms × 2 repeats", sums)
	}
	for _, p := range sums {
		if c := readSummaryStruct(t, filepath.Dir(p)).Inputs; c == nil || c.Intended != total || c.Counted != total {
			t.Errorf("%s: inputs %+v", p, c)
		}
	}
}
