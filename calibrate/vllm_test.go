package calibrate

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
)

// vllmSample is a result file in the shape vLLM's bench serve writes with --save-result
// --save-detailed (vllm/benchmarks/serve.py): summary fields, the per-request lists, and the
// percentile fields, of which ParseVLLMBench reads only the lists.
const vllmSample = `{
  "date": "20261201-101500", "endpoint_type": "openai", "backend": "vllm", "label": null,
  "model_id": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct",
  "num_prompts": 3, "request_rate": 4.0, "burstiness": 1.0, "max_concurrency": null,
  "duration": 1.9, "completed": 2, "failed": 1, "total_input_tokens": 612, "total_output_tokens": 7,
  "request_throughput": 1.05, "request_goodput": null, "output_throughput": 3.68, "total_token_throughput": 325.8,
  "input_lens": [512, 100, 90],
  "output_lens": [4, 3, 0],
  "ttfts": [0.0215, 0.0187, 0.0],
  "itls": [[0.0071, 0.0069, 0.0072], [0.0140], []],
  "latencies": [0.0428, 0.0330, 0.0],
  "start_times": [1234.5, 1234.75, 1235.0],
  "queue_times": [0.0, 0.0, 0.0],
  "generated_texts": ["a b c d", "e f g", ""],
  "errors": ["", "", "Traceback (most recent call last): aiohttp.ClientResponseError 503"],
  "max_output_tokens_per_s": 290.0, "max_concurrent_requests": 2, "rtfx": 0.0,
  "mean_ttft_ms": 20.1, "median_ttft_ms": 20.1, "std_ttft_ms": 1.4, "p99_ttft_ms": 21.5,
  "mean_tpot_ms": 7.1, "median_tpot_ms": 7.1, "std_tpot_ms": 0.1, "p99_tpot_ms": 7.2,
  "mean_itl_ms": 8.8, "median_itl_ms": 7.1, "std_itl_ms": 2.8, "p99_itl_ms": 13.9,
  "mean_e2el_ms": 37.9, "median_e2el_ms": 37.9, "std_e2el_ms": 4.9, "p99_e2el_ms": 42.8
}`

func TestParseVLLMBenchRealFormat(t *testing.T) {
	recs, err := ParseVLLMBench([]byte(vllmSample), "bench.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	r := recs[0]
	if r.Intended != 0 || r.FirstToken != 21_500_000 || r.End != 42_800_000 || r.InputTokens != 512 || r.OutputTokens != 4 || !r.OK() {
		t.Errorf("request 0: %+v", r)
	}
	wantT := []int64{21_500_000, 28_600_000, 35_500_000, 42_700_000}
	for j, c := range r.Chunks {
		if c.T != wantT[j] || c.Tokens != 1 {
			t.Errorf("request 0 chunk %d: %+v, want T %d with 1 token", j, c, wantT[j])
		}
	}
	// Three tokens in two chunks: the first chunk takes the extra one.
	r = recs[1]
	if r.Intended != 250_000_000 || len(r.Chunks) != 2 || r.Chunks[0].Tokens != 2 || r.Chunks[1].Tokens != 1 || r.End != 283_000_000 {
		t.Errorf("request 1: %+v", r)
	}
	if recs[2].OK() || recs[2].Failure != metrics.FailServerError || !strings.Contains(recs[2].Error, "503") {
		t.Errorf("request 2 should be failed with its error: %+v", recs[2])
	}
}

func TestParseVLLMBenchErrors(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"syntax", "{\n  \"ttfts\": [0.1,,]\n}", "bench.json:2:"},
		{"not detailed", `{"duration": 3, "completed": 10}`, `no "ttfts"`},
		{"old vllm", `{"ttfts": [0.1], "itls": [[]], "input_lens": [5], "output_lens": [1]}`, `no "start_times"`},
		{"lengths", `{"ttfts": [0.1, 0.2], "itls": [[], []], "input_lens": [5], "output_lens": [1, 1], "start_times": [0, 1]}`, `"input_lens" has 1 entries but "ttfts" has 2`},
		{"type", `{"ttfts": ["fast"]}`, `field "ttfts"`},
		{"negative gap", `{"ttfts": [0.1], "itls": [[-1]], "input_lens": [5], "output_lens": [2], "start_times": [0]}`, `"itls"[0]`},
	} {
		_, err := ParseVLLMBench([]byte(c.data), "bench.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// TestCalibrateFromVLLMFile: a run written in vLLM's format (from exact measurements of a
// hidden deployment) fits like the same run in llmbench's own records.
func TestCalibrateFromVLLMFile(t *testing.T) {
	reqs := workload(120, 6, 3)
	g, _ := perf.LookupGPU("h100")
	g.BWEff, g.KVBWEff, g.FLOPEff, g.StepOverhead = hidden.BWEff, hidden.KVBWEff, hidden.FLOPEff, hidden.StepOverhead
	reg := perf.NewRegistry()
	if err := reg.Add(nil, []perf.GPU{g}); err != nil {
		t.Fatal(err)
	}
	res, err := refengine.Simulate(reqs, refengine.Config{GPU: "h100", Profiles: reg, DisablePrefixCaching: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var f vllmBench
	for i := range res.Timelines {
		tl := &res.Timelines[i]
		f.InputLens = append(f.InputLens, tl.PromptTokens)
		f.OutputLens = append(f.OutputLens, tl.OutputTokens)
		f.StartTimes = append(f.StartTimes, 100+tl.Arrival.Seconds())
		f.TTFTs = append(f.TTFTs, tl.TTFT().Seconds())
		f.Latencies = append(f.Latencies, tl.E2E().Seconds())
		f.Errors = append(f.Errors, "")
		var itl []float64
		for j := 1; j < len(tl.Emissions); j++ {
			itl = append(itl, (tl.Emissions[j].At - tl.Emissions[j-1].At).Seconds())
		}
		f.ITLs = append(f.ITLs, itl)
	}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "vllm-bench.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fit, err := Run(Options{Engine: refengine.Config{GPU: "h100", DisablePrefixCaching: true, Seed: 1}, Fit: []string{path}})
	if err != nil {
		t.Fatal(err)
	}
	c := fit.Constants
	for _, p := range []struct {
		name      string
		got, want float64
	}{{"bw_eff", c.BWEff, hidden.BWEff}, {"flop_eff", c.FLOPEff, hidden.FLOPEff},
		{"step overhead", c.StepOverhead.Seconds(), hidden.StepOverhead.Seconds()}} {
		if math.Abs(p.got-p.want)/p.want > 0.02 {
			t.Errorf("%s: fitted %g from the vLLM file, hidden %g", p.name, p.got, p.want)
		}
	}
}

func FuzzParseVLLMBench(f *testing.F) {
	f.Add([]byte(vllmSample))
	f.Add([]byte(`{"ttfts": [0.1], "itls": [[0.01, 0.02]], "input_lens": [5], "output_lens": [3], "start_times": [7]}`))
	f.Add([]byte(`{"ttfts": [1e308], "itls": [[1e308]], "input_lens": [5], "output_lens": [1], "start_times": [-1e308], "latencies": [NaN]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := ParseVLLMBench(data, "fuzz.json")
		if err != nil {
			return
		}
		for i, r := range recs {
			if !r.OK() {
				continue
			}
			if r.FirstToken < r.Intended || r.End < r.FirstToken || len(r.Chunks) == 0 || r.Chunks[0].T != r.FirstToken {
				t.Fatalf("record %d out of order: %+v", i, r)
			}
			var tokens int
			for j, c := range r.Chunks {
				tokens += int(c.Tokens)
				if j > 0 && c.T < r.Chunks[j-1].T {
					t.Fatalf("record %d: chunk %d before chunk %d", i, j, j-1)
				}
			}
			if tokens != r.OutputTokens {
				t.Fatalf("record %d: chunks carry %d tokens, output %d", i, tokens, r.OutputTokens)
			}
		}
	})
}
