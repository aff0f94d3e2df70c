package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/traces"
)

func TestLoRAEngineFlags(t *testing.T) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	f := addEngineFlags(fs)
	if err := fs.Parse([]string{"--lora", "sql:64", "--lora", "chat,tools:8", "--max-loras", "2"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config()
	if err != nil {
		t.Fatal(err)
	}
	want := []refengine.LoRA{{Name: "sql", Rank: 64}, {Name: "chat"}, {Name: "tools", Rank: 8}}
	if len(cfg.LoRAs) != 3 || cfg.LoRAs[0] != want[0] || cfg.LoRAs[1] != want[1] || cfg.LoRAs[2] != want[2] || cfg.MaxLoRAs != 2 {
		t.Fatalf("config: %+v on %d slots", cfg.LoRAs, cfg.MaxLoRAs)
	}
	if got := f.changedNames(); !strings.Contains(got, "--lora") || !strings.Contains(got, "--max-loras") {
		t.Errorf("changedNames %q lacks the adapter flags", got)
	}
	for args, msg := range map[string]string{
		"--lora=sql:x":    `--lora "sql:x": the rank after ':' must be an integer`,
		"--max-loras=2":   "--max-loras 2 needs adapters",
		"--max-loras=-1":  "--max-loras -1: must be >= 1",
		"--lora=sql:0":    `--lora "sql:0"`,
		"--lora= padded ": `--lora " padded "`,
	} {
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		f := addEngineFlags(fs)
		if err := fs.Parse([]string{args}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.config(); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", args, err, msg)
		}
	}
}

// gen --models → simulate --lora --max-loras: the trace names the adapters, the summary breaks
// results down by them and its engine facts count the swaps; bad weights and misplaced flags
// are refused by name (issue 38).
func TestLoRAGenSimulateCLI(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "mix.jsonl")
	a := newTestApp(nil)
	if code := a.cli("gen", "--preset", "chat", "--rate", "4", "--duration", "20s", "--models", "a=1,b=1,c=1", "-o", trace); code != 0 {
		t.Fatalf("gen: %d %s", code, a.err.String())
	}
	reqs, err := traces.ReadFile(trace, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if r.Model != "a" && r.Model != "b" && r.Model != "c" {
			t.Fatalf("request %s: model %q", r.ID, r.Model)
		}
	}
	out := filepath.Join(dir, "sim")
	a = newTestApp(nil)
	if code := a.cli("simulate", "--trace", trace, "--lora", "a,b:8", "--lora", "c:64", "--max-loras", "2", "--out", out); code != 0 {
		t.Fatalf("simulate: %d %s", code, a.err.String())
	}
	if !strings.Contains(a.out.String(), "Model (ms)") {
		t.Errorf("the terminal report has no per-model table:\n%s", a.out.String())
	}
	m := readSummaryMap(t, out)
	byModel, _ := m["by_model"].(map[string]any)
	engine, _ := m["run"].(map[string]any)["engine"].(map[string]any)
	if len(byModel) != 3 || engine["lora_modules"] != "a:16,b:8,c:64" || engine["max_loras"] != "2" || engine["lora_loads"] == "0" {
		t.Errorf("by_model %v; engine facts %v", byModel, engine)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"gen", "--models", "a=1,b=two"}, `--models: entry "b=two": the weight "two" is not a positive number`},
		{[]string{"gen", "--preset", "tool-calling", "--models", "a=1"}, "--models mixes models into generated traffic"},
		{[]string{"simulate", "--trace", trace, "--lora", "a"}, `model: "b" is not served by the reference engine`},
		{[]string{"run", "--trace", trace, "--endpoint", "http://127.0.0.1:1", "--lora", "a"}, "--lora"},
		{[]string{"import", "--format", "azure", "--keep-model", "x.csv"}, "--keep-model applies to --format burstgpt|weka"},
	} {
		a := newTestApp(nil)
		if code := a.cli(c.args...); code == 0 || !strings.Contains(a.err.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want it to contain %q", c.args, code, a.err.String(), c.want)
		}
	}
}
