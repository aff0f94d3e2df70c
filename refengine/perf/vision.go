package perf

import (
	"fmt"
	"math"
)

// Vision is how a model turns an image into prompt tokens, and the size of the vision encoder
// that computes them. The reference engine prices a multimodal request as vision-language
// models are served: the image's tokens join the prompt (prefilled and cached like text), and
// the encoder's work, 2·EncoderParams FLOPs per image token, runs in the step that starts the
// request's prefill, so TTFT grows with the number and resolution of images.
type Vision struct {
	// The tiling rule: an image is scaled down to fit MaxSide × MaxSide, then down again so
	// that its shorter side is at most ShortSide, and cut into TilePx × TilePx tiles; it costs
	// BaseTokens plus TokensPerTile per tile.
	TilePx, TokensPerTile, BaseTokens, MaxSide, ShortSide int
	// EncoderParams is the vision encoder's parameter count.
	EncoderParams float64
}

// DefaultVision is the rule of the built-in profiles: OpenAI's documented tiling for GPT-4o
// images at "high" detail (OpenAI platform docs, "Images and vision", calculating costs: fit in
// 2048 × 2048, shorter side to 768, 170 tokens per 512-px tile plus 85), with an encoder the
// size of CLIP ViT-L/14 (304M parameters, the vision tower of LLaVA-1.5).
var DefaultVision = Vision{TilePx: 512, TokensPerTile: 170, BaseTokens: 85, MaxSide: 2048, ShortSide: 768, EncoderParams: 304e6}

// validate checks a rule given in a profile file: a tile side and tokens per tile above 0,
// the rest at least 0 (0 for MaxSide or ShortSide: no scaling to it).
func (v Vision) validate() error {
	switch {
	case v.TilePx < 1 || v.TokensPerTile < 1:
		return fmt.Errorf("tile_px and tokens_per_tile must be > 0, got %d and %d", v.TilePx, v.TokensPerTile)
	case v.BaseTokens < 0 || v.MaxSide < 0 || v.ShortSide < 0:
		return fmt.Errorf("base_tokens, max_side and short_side must be >= 0")
	case !(v.EncoderParams >= 0) || math.IsInf(v.EncoderParams, 0):
		return fmt.Errorf("encoder_params must be a number of parameters >= 0, got %g", v.EncoderParams)
	case v.TokensPerTile > 1<<16 || v.BaseTokens > 1<<16 || v.TilePx > 1<<16:
		return fmt.Errorf("tile_px, tokens_per_tile and base_tokens must be at most 65536")
	}
	return nil
}

// VisionOf returns m's vision rule: m.Vision, or DefaultVision when m has none.
func VisionOf(m Model) Vision {
	if m.Vision.TilePx > 0 {
		return m.Vision
	}
	return DefaultVision
}

// ImageTokens is the number of prompt tokens of a w × h image (0 for an empty one), at most
// 2^30.
func (v Vision) ImageTokens(w, h int) int {
	if w <= 0 || h <= 0 || v.TilePx <= 0 {
		return 0
	}
	fw, fh := float64(w), float64(h)
	if s := float64(v.MaxSide) / math.Max(fw, fh); v.MaxSide > 0 && s < 1 {
		fw, fh = fw*s, fh*s
	}
	if s := float64(v.ShortSide) / math.Min(fw, fh); v.ShortSide > 0 && s < 1 {
		fw, fh = fw*s, fh*s
	}
	tile := float64(v.TilePx)
	// A side within a millionth of a tile boundary is on it (scaling rounds).
	tiles := math.Ceil(fw/tile-1e-6) * math.Ceil(fh/tile-1e-6)
	// Saturate (a rule without MaxSide lets a header claim any size): past maxImageTokens no
	// model's context holds the image anyway.
	return int(math.Min(float64(v.BaseTokens)+float64(v.TokensPerTile)*tiles, maxImageTokens))
}

// maxImageTokens bounds ImageTokens.
const maxImageTokens = 1 << 30
