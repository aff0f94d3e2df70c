package perf

import (
	"math"
	"strings"
	"testing"
)

// TestImageTokens: the default rule is GPT-4o's "high" detail tiling: fit in 2048 × 2048,
// shorter side to 768, 170 tokens per 512-px tile plus 85.
func TestImageTokens(t *testing.T) {
	for _, tc := range []struct{ w, h, want int }{
		{512, 512, 85 + 170},     // one tile
		{513, 512, 85 + 2*170},   // just over: two
		{1024, 1024, 85 + 4*170}, // shorter side 1024 → 768: 768×768, 2×2 tiles
		{1024, 768, 85 + 4*170},  // 2×2
		{2048, 4096, 85 + 6*170}, // → 1024×2048 → 768×1536: 2×3
		{1920, 1080, 85 + 6*170}, // → 1365×768: 3×2
		{100, 50, 85 + 170},      // small images are one tile
		{8192, 8192, 85 + 4*170}, // → 2048² → 768²
		{0, 10, 0},
	} {
		if got := DefaultVision.ImageTokens(tc.w, tc.h); got != tc.want {
			t.Errorf("%dx%d: %d tokens, want %d", tc.w, tc.h, got, tc.want)
		}
	}
}

// TestEncoderCost: the vision encoder's tokens add 2·EncoderParams FLOPs each to a step's
// compute, at the linear layers' rate, and nothing else (the step combines compute and memory
// time as it does without images).
func TestEncoderCost(t *testing.T) {
	r, err := New(Config{Model: mustModel(t, "llama-3.1-8b"), GPU: mustGPU(t, "h100")})
	if err != nil {
		t.Fatal(err)
	}
	w := Work{}
	w.Add(2048, 0) // a compute-bound prefill chunk
	base := r.StepTime(w)
	w.EncoderTokens = 765
	with := r.StepTime(w)
	w.EncoderTokens = 0
	// The encoder runs in the linear layers' phase: weights against linear FLOPs.
	linMem := r.weightBytes * r.secPerByte
	linComp := r.linFLOPsPerToken * 2048 * r.secPerLinFLOP
	enc := 765 * 2 * DefaultVision.EncoderParams * r.secPerLinFLOP
	want := r.combine(linMem, linComp+enc) - r.combine(linMem, linComp)
	if got := (with - base).Seconds(); enc <= 0 || math.Abs(got-want) > 2e-9 {
		t.Errorf("encoder adds %.6f ms, want %.6f ms", got*1e3, want*1e3)
	}
}

// TestVisionProfiles: a profile file may give a model its own vision rule (validated, and
// written back by FormatProfiles); a rule without scaling saturates instead of overflowing.
func TestVisionProfiles(t *testing.T) {
	const file = `{"models":[{"name":"vlm","layers":2,"hidden":64,"heads":4,"kv_heads":2,"head_dim":16,"ffn":128,"vocab":100,"params":1e6,"max_context":4096,
	  "vision":{"tile_px":448,"tokens_per_tile":256,"base_tokens":0,"max_side":0,"short_side":0,"encoder_params":3e8}}],"gpus":[]}`
	models, _, err := ParseProfiles([]byte(file), "p.json")
	if err != nil {
		t.Fatal(err)
	}
	v := VisionOf(models[0])
	if got := v.ImageTokens(896, 448); got != 2*256 {
		t.Errorf("896x448 with 448-px tiles: %d tokens, want 512", got)
	}
	if got := v.ImageTokens(1<<31-1, 1<<31-1); got != maxImageTokens {
		t.Errorf("a huge image: %d tokens, want the cap %d", got, maxImageTokens)
	}
	out, err := FormatProfiles(models, nil)
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := ParseProfiles(out, "back.json")
	if err != nil || back[0].Vision != models[0].Vision {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	bad := strings.Replace(file, `"tile_px":448`, `"tile_px":0`, 1)
	if _, _, err := ParseProfiles([]byte(bad), "p.json"); err == nil || !strings.Contains(err.Error(), "models[0]: vision: tile_px") {
		t.Errorf("tile_px 0: %v", err)
	}
}
