package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestSpecMethodFlags: the speculative-method flags reach the engine configuration, alone and
// as ab arm overrides, and bad combinations are refused naming the flag.
func TestSpecMethodFlags(t *testing.T) {
	parse := func(args ...string) (*engineFlags, error) {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		ef := addEngineFlags(fs)
		return ef, fs.Parse(args)
	}
	ef, err := parse("--spec-k", "4", "--spec-method", "medusa", "--spec-tree", "24", "--spec-alpha", "0.9,0.7,0.5")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ef.config()
	if err != nil || cfg.SpecMethod != "medusa" || cfg.SpecTree != 24 || len(cfg.SpecAlphas) != 3 || cfg.SpecAlpha != 0 {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	ef, _ = parse("--spec-k", "4", "--spec-draft-model", "llama-3.2-1b", "--spec-draft-tp", "1")
	if cfg, err = ef.config(); err != nil || cfg.SpecDraftTP != 1 || cfg.SpecDraftModel != "llama-3.2-1b" {
		t.Fatalf("draft tp: %+v, %v", cfg, err)
	}
	ef, _ = parse("--spec-k", "4", "--spec-alpha", "0.7")
	if cfg, err = ef.config(); err != nil || cfg.SpecAlpha != 0.7 || cfg.SpecAlphas != nil {
		t.Fatalf("one alpha: %+v, %v", cfg, err)
	}
	ef, _ = parse("--spec-k", "5", "--spec-method", "ngram", "--spec-repetition", "summarize=0.8,0.3")
	if cfg, err = ef.config(); err != nil || cfg.SpecRepetition["summarize"] != 0.8 || cfg.SpecRepetition[""] != 0.3 {
		t.Fatalf("repetition: %+v, %v", cfg, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--spec-method", "eagle"}, "--spec-method needs --spec-k"},
		{[]string{"--spec-tree", "8"}, "--spec-tree needs --spec-k"},
		{[]string{"--spec-k", "4", "--spec-method", "ngram", "--spec-repetition", "rag=1.5"}, "--spec-repetition"},
		{[]string{"--spec-k", "4", "--spec-alpha", "0.9,x"}, "--spec-alpha"},
		{[]string{"--spec-k", "4", "--spec-draft-tp", "1"}, "--spec-draft-tp 1 needs --spec-draft-model"},
	} {
		ef, _ := parse(tc.args...)
		if _, err := ef.config(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	// ab: an arm's overrides, with commas inside a value.
	o := &abOptions{fs: pflag.NewFlagSet("ab", pflag.ContinueOnError)}
	addEngineFlags(o.fs)
	arm, err := o.armEngineFlags([]string{"spec-k=4,spec-method=ngram,spec-repetition=rag=0.8,0.3"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = arm.config(); err != nil || cfg.SpecMethod != "ngram" || cfg.SpecRepetition["rag"] != 0.8 || cfg.SpecRepetition[""] != 0.3 {
		t.Fatalf("ab arm: %+v, %v", cfg, err)
	}
}
