package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/refengine"
)

func TestServeCommand(t *testing.T) {
	pr, pw := io.Pipe()
	app := &App{Stdout: pw, Stderr: io.Discard, Getenv: func(k string) string {
		if k == "LLMBENCH_API_KEY" {
			return "sk-env-key"
		}
		return ""
	}}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- execute(ctx, app, []string{"serve", "--addr", "127.0.0.1:0", "--time-scale", "100", "--spec-k", "2", "--served-model-name", "m", "--max-connections", "4"})
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	url := ""
	for url == "" && sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), "listening on "); ok {
			url, _, _ = strings.Cut(rest, " ")
		}
	}
	go io.Copy(io.Discard, pr)
	if url == "" {
		cancel()
		t.Fatalf("serve printed no URL (exit %d)", <-code)
	}
	post := func(key string) (int, string) {
		req, _ := http.NewRequest("POST", url+"/v1/completions", strings.NewReader(`{"model":"m","prompt":"hi","max_tokens":3}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if c, b := post("wrong"); c != 401 {
		t.Errorf("wrong key: %d %s", c, b)
	}
	if c, b := post("sk-env-key"); c != 200 || !strings.Contains(b, `"completion_tokens":3`) {
		t.Errorf("key from LLMBENCH_API_KEY: %d %s", c, b)
	}
	resp, err := http.Get(url + "/version")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"num_speculative_tokens":2`) || !strings.Contains(string(b), `"time_scale":100`) {
		t.Errorf("/version: %s", b)
	}
	cancel()
	if c := <-code; c != 0 {
		t.Fatalf("serve exited %d after cancel", c)
	}
}

func TestEngineFlagsConfig(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	ef := addEngineFlags(fs)
	if err := fs.Parse([]string{"--gpu", "h200", "--tp", "2", "--weight-dtype", "fp8", "--kv-dtype", "fp8",
		"--max-num-seqs", "64", "--max-num-batched-tokens", "4096", "--block-size", "32", "--gpu-memory-utilization", "0.8",
		"--enable-prefix-caching=false", "--spec-k", "4", "--spec-alpha", "0.7", "--faults", "stall=0.1:1s",
		"--model", "llama-3.1-70b"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := ef.config()
	if err != nil {
		t.Fatal(err)
	}
	want := refengine.Config{Model: "llama-3.1-70b", GPU: "h200", TP: 2, WeightDtype: "fp8", KVDtype: "fp8", MaxNumSeqs: 64,
		MaxNumBatchedTokens: 4096, BlockSize: 32, GPUMemUtil: 0.8, DisablePrefixCaching: true, SpecK: 4, SpecAlpha: 0.7,
		Faults: refengine.Faults{Stall: 0.1, StallFor: time.Second}, Wire: "vllm", Seed: defaultEngineSeed, Quality: refengine.DefaultQuality()}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("config\n got %+v\nwant %+v", cfg, want)
	}
	if !ef.changed() || strings.Contains(ef.changedNames(), "--model") || !strings.Contains(ef.changedNames(), "--gpu") || ef.modelName() != "llama-3.1-70b" {
		t.Fatalf("changed %v %q model %q", ef.changed(), ef.changedNames(), ef.modelName())
	}
	eng, err := refengine.New(cfg)
	if err != nil {
		t.Fatalf("flags give an engine config New rejects: %v", err)
	}
	eng.Close()

	for _, args := range [][]string{{"--faults", "bogus=1"}, {"--spec-alpha", "0.5"}, {"--profiles", "/nonexistent/profiles.json"}} {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		ef := addEngineFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if _, err := ef.config(); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: error %v should name the flag", args, err)
		}
	}
	fs = pflag.NewFlagSet("x", pflag.ContinueOnError)
	ef = addEngineFlags(fs)
	if ef.changed() || ef.modelName() != "" {
		t.Fatal("defaults count as changed")
	}
}

func TestEngineFlagsProfilesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiles.json")
	err := os.WriteFile(path, []byte(`{"gpus":[{"name":"tiny-gpu","mem_gb":24,"mem_bw_gbs":1000,"bf16_tflops":100,"link_gbs":50}]}`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	ef := addEngineFlags(fs)
	if err := fs.Parse([]string{"--profiles", path, "--gpu", "tiny-gpu", "--disaggregated", "--kv-transfer-gbps", "25", "--engine-seed", "7"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := ef.config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Profiles == nil || !cfg.Disaggregated || cfg.KVTransferBW != 25e9 || cfg.Seed != 7 {
		t.Fatalf("%+v", cfg)
	}
	eng, err := refengine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if info := eng.Info(); info.GPU != "tiny-gpu" || !info.Disaggregated {
		t.Fatalf("engine info %+v", info)
	}
}
