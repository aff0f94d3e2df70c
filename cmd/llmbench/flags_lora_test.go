package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/refengine"
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
