package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/calibrate"
	"github.com/llmbench/llmbench/refengine/perf"
)

// TestProfilesApplyCalibration: a calibrated profile's learned cap, token budget and declared
// longest request apply with
// --profiles alone, on the GPU calibrated; an explicit flag wins; another GPU does not take
// them; a bad block is an error naming --profiles.
func TestProfilesApplyCalibration(t *testing.T) {
	dir := t.TempDir()
	g, _ := perf.LookupGPU("h100")
	g.BWEff, g.KVBWEff, g.FLOPEff, g.StepOverhead, g.StepOverheadPerSeq = 0.5, 0.45, 0.4, 2*time.Millisecond, 700*time.Microsecond
	data, err := calibrate.FormatProfile(nil, &calibrate.Result{GPU: g, MaxNumSeqs: 4, CapSource: calibrate.CapFromQueue, MaxNumBatchedTokens: 512,
		MaxModelLen: 4096})
	if err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "p.json")
	if err := os.WriteFile(prof, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args                  []string
		seqs, batched, maxLen int
	}{
		{[]string{"--profiles", prof}, 4, 512, 4096},
		{[]string{"--profiles", prof, "--gpu", "h100"}, 4, 512, 4096},
		{[]string{"--profiles", prof, "--max-num-seqs", "16"}, 16, 512, 4096},
		{[]string{"--profiles", prof, "--max-num-batched-tokens", "2048"}, 4, 2048, 4096},
		{[]string{"--profiles", prof, "--max-model-len", "8192"}, 4, 512, 8192},
		{[]string{"--profiles", prof, "--gpu", "a100"}, 256, 8192, 0},
		{[]string{}, 256, 8192, 0},
	} {
		cfg := mustEngineConfig(t, c.args...)
		if cfg.MaxNumSeqs != c.seqs || cfg.MaxNumBatchedTokens != c.batched || cfg.MaxModelLen != c.maxLen {
			t.Errorf("%v: max-num-seqs %d, max-num-batched-tokens %d, max-model-len %d; want %d, %d and %d", c.args,
				cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens, cfg.MaxModelLen, c.seqs, c.batched, c.maxLen)
		}
	}
	// The per-sequence cost travels in the GPU profile and prices every step with --profiles.
	reg := perf.NewRegistry()
	if err := reg.LoadJSON(data, prof); err != nil {
		t.Fatal(err)
	}
	if got, _ := reg.GPU(g.Name); got.StepOverheadPerSeq != 700*time.Microsecond {
		t.Errorf("the profile's per-sequence cost: %s, want 700µs", got.StepOverheadPerSeq)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(data), `"max_num_seqs": 4`, `"max_num_seqs": -4`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("engine", pflag.ContinueOnError)
	f := addEngineFlags(fs)
	if err := fs.Parse([]string{"--profiles", bad}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.config(); err == nil || !strings.Contains(err.Error(), "--profiles") || !strings.Contains(err.Error(), "max_num_seqs") {
		t.Errorf("a bad calibration block: %v", err)
	}
}
