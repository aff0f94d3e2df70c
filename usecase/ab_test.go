package usecase

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
)

const chatSmall = "../traces/examples/chat-small.jsonl"

// testEnv is an Env over buffers, with no interrupts and progress off.
func testEnv() (*Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" },
		Args: []string{"ab", "--trace", chatSmall}, Version: "test"}, &out, &errb
}

// defaultEngine is the reference engine as the CLI's flag defaults configure it.
func defaultEngine() EngineOptions {
	return EngineOptions{Model: "llama-3.1-8b", GPU: "h100-sxm", TP: 1, WeightDtype: "bf16", KVDtype: "bf16",
		MaxNumSeqs: 256, MaxNumBatchedTokens: 8192, BlockSize: 16, GPUMemUtil: 0.9, PrefixCaching: true,
		Seed: "1", Wire: "vllm", Quality: "on"}
}

// defaultAB is ab's options as the CLI's flag defaults set them, over chat-small, with the
// output directory in a test directory.
func defaultAB(t *testing.T) *ABOptions {
	return &ABOptions{
		Trace: TraceOptions{Path: chatSmall, MaxSpan: DefaultMaxSpan, RateScale: 1, TimeScale: 20},
		AName: "A", BName: "B", Runs: "2", MaxRuns: 10, Independence: "salt", WarmupRequests: 2,
		Format: "json", Resamples: 500,
		Target: TargetOptions{BatchSize: 1, Backend: "vllm", TConnect: 30 * time.Second, TFirstToken: 5 * time.Minute,
			TIdle: time.Minute, TTotal: 30 * time.Minute, MaxLine: loadgen.DefaultMaxLineBytes,
			PromptSizing: loadgen.SizingAuto, SessionHeader: "x-session-id"},
		Load:    LoadOptions{RateScale: 1, TimeScale: 20, MaxRequests: 12, Repeat: 1, Seed: 1, Grace: 10 * time.Second, BlockTokens: 512},
		Metrics: MetricOptions{InputTol: metrics.DefaultInputTolerance, Stall: "5x", GPUs: 1, Currency: "USD"},
		Output:  OutputOptions{Out: t.TempDir(), NoProgress: true},
		Engine:  defaultEngine(),
		Fail:    FailureOptions{MaxRate: runner.DefaultMaxFailureRate},
		Quality: QualityOptions{JudgeConc: 4},
	}
}

// TestABEngineArmsWithoutCobra runs the A/B use case from its options alone: two embedded
// engines, B with speculative decoding through ArmEngine, and checks the comparison on
// stdout (JSON only), ab.json, and that the configuration difference names spec_k.
func TestABEngineArmsWithoutCobra(t *testing.T) {
	o := defaultAB(t)
	o.BEngine = []string{"spec-k=4"}
	var asked [][]string
	o.ArmEngine = func(overrides []string) (EngineOptions, error) {
		asked = append(asked, overrides)
		e := o.Engine
		if slices.Equal(overrides, []string{"spec-k=4"}) {
			e.SpecK = 4
		}
		return e, nil
	}
	env, out, errb := testEnv()
	code, err := AB(context.Background(), env, o)
	if err != nil || code != ExitOK {
		t.Fatalf("AB: exit %d, %v; stderr:\n%s", code, err, errb)
	}
	if len(asked) != 2 || len(asked[0]) != 0 || !slices.Equal(asked[1], []string{"spec-k=4"}) {
		t.Fatalf("ArmEngine asked %q, want [] then [spec-k=4]", asked)
	}
	var c metrics.Comparison
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatalf("stdout is not the comparison's JSON alone: %v\n%s", err, out)
	}
	if c.Base.Label == "" || c.Base.Runs != 2 || c.Cand.Runs != 2 || c.Regressed {
		t.Errorf("comparison: base %+v cand runs %d regressed %v", c.Base.Label, c.Cand.Runs, c.Regressed)
	}
	found := false
	for _, d := range c.ConfigDiff {
		if d.Key == "engine.num_speculative_tokens" && d.Base == "0" && d.Cand == "4" {
			found = true
		}
	}
	if !found {
		t.Errorf("config diff %+v does not name engine.num_speculative_tokens 0 → 4", c.ConfigDiff)
	}
	if _, err := os.Stat(filepath.Join(o.Output.Out, "ab.json")); err != nil {
		t.Errorf("ab.json: %v", err)
	}
	if !strings.Contains(errb.String(), "Independent repeats: prompts salted per repeat") {
		t.Errorf("with --format json the messages go to stderr; stderr:\n%s", errb)
	}
}

// TestABRefusesBadOptions checks the options refused before any trace is read or engine
// started: each gets exit 2 and an error naming the flag.
func TestABRefusesBadOptions(t *testing.T) {
	changed := func(names ...string) Changed {
		return func(n string) bool { return slices.Contains(names, n) }
	}
	for _, tc := range []struct {
		name   string
		change func(o *ABOptions)
		want   string
	}{
		{"same names", func(o *ABOptions) { o.BName = "A" }, "--a-name and --b-name must differ"},
		{"one endpoint", func(o *ABOptions) { o.AEndpoint = "http://127.0.0.1:1" }, "give both --a-endpoint and --b-endpoint"},
		{"endpoint", func(o *ABOptions) { o.Target.Endpoint = "http://127.0.0.1:1" }, "not --endpoint"},
		{"scrape", func(o *ABOptions) { o.Target.ScrapeMetric = true }, "--scrape-metrics applies to run"},
		{"format", func(o *ABOptions) { o.Format = "yaml" }, `--format "yaml"`},
		{"repeat", func(o *ABOptions) { o.Changed = changed("repeat") }, "use --runs N"},
		{"both spellings", func(o *ABOptions) { o.Changed = changed("runs", "repeats") }, "give --runs only"},
		{"auto without rules", func(o *ABOptions) { o.Runs = "auto" }, "--runs auto needs --fail-on"},
		{"runs zero", func(o *ABOptions) { o.Runs = "0" }, `--runs "0"`},
		{"independence", func(o *ABOptions) { o.Independence = "never" }, "--independent-repeats"},
		{"self-check json", func(o *ABOptions) { o.SelfCheck = 2 }, "--self-check prints one line per experiment"},
		{"failure rate", func(o *ABOptions) { o.Fail.MaxRate = 2 }, "--max-failure-rate 2"},
		{"judge flag alone", func(o *ABOptions) { o.Quality.Changed = changed("judge-model") }, "--judge-model needs --judge-endpoint"},
		{"overrides without parser", func(o *ABOptions) { o.BEngine = []string{"spec-k=4"} }, "arm B: engine overrides"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultAB(t)
			tc.change(o)
			env, out, _ := testEnv()
			code, err := AB(context.Background(), env, o)
			if code != ExitBadInput || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("exit %d, %v; want 2 and an error with %q", code, err, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout holds %q for refused options", out)
			}
		})
	}
}

// TestABWarnsOfOldSpelling checks that --repeats still works and warns on stderr.
func TestABWarnsOfOldSpelling(t *testing.T) {
	o := defaultAB(t)
	o.Changed = func(n string) bool { return n == "repeats" }
	o.Runs = "x" // refused after the warning: no run starts
	env, _, errb := testEnv()
	if code, err := AB(context.Background(), env, o); code != ExitBadInput || err == nil {
		t.Fatalf("exit %d, %v", code, err)
	}
	if !strings.Contains(errb.String(), "--repeats is deprecated: use --runs") {
		t.Errorf("stderr %q lacks the deprecation warning", errb)
	}
}

func TestParseRepeats(t *testing.T) {
	for _, tc := range []struct {
		in      string
		max     int
		n       int
		auto    bool
		wantErr string
	}{
		{"3", 10, 3, false, ""}, {" AUTO ", 10, 0, true, ""}, {"auto", 1, 0, false, "--max-runs 1"},
		{"0", 10, 0, false, "--runs"}, {"-1", 10, 0, false, "--runs"}, {"two", 10, 0, false, "--runs"},
	} {
		n, auto, err := ParseRepeats(tc.in, tc.max)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseRepeats(%q, %d) = %v, want error with %q", tc.in, tc.max, err, tc.wantErr)
			}
			continue
		}
		if err != nil || n != tc.n || auto != tc.auto {
			t.Errorf("ParseRepeats(%q, %d) = %d, %v, %v", tc.in, tc.max, n, auto, err)
		}
	}
}
