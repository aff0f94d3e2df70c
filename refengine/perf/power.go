package perf

import (
	"fmt"
	"math"
	"strings"
)

// Power is a GPU's board power model (issue 39): what one GPU draws idle and at full load. The
// reference engine draws IdleW plus (BoardW − IdleW) times the share of time its scheduler has
// a step on the GPU (refengine/power.go).
type Power struct {
	// IdleW is the power of an idle GPU with a model loaded (W): a measured figure, not a data
	// sheet's.
	IdleW float64
	// BoardW is the board power limit (W, the data sheet's maximum TDP of the form factor).
	BoardW float64
	// MemoryBoundFloor is the share of the dynamic range (BoardW − IdleW) a busy GPU draws on
	// a step with no compute (a memory-bound decode); a step's compute share adds the rest
	// (refengine/power.go). 0: DefaultMemoryBoundFloor.
	MemoryBoundFloor float64
	// Source names where the figures come from.
	Source string
}

// DefaultMemoryBoundFloor: a published vLLM power ladder on an H100 SXM (the alice-benchmark
// GPU energy report, 2026: 267 W at batch 1, 680 W at batch 128, 8 models) puts memory-bound
// single-sequence decode at (267 − 70) / (700 − 70) ≈ 0.31 of the dynamic range.
const DefaultMemoryBoundFloor = 0.3

// Floor is p.MemoryBoundFloor, or the default when unset.
func (p Power) Floor() float64 {
	if p.MemoryBoundFloor > 0 && p.MemoryBoundFloor <= 1 {
		return p.MemoryBoundFloor
	}
	return DefaultMemoryBoundFloor
}

// Validate checks that the figures can be used: 0 < IdleW < BoardW, finite; a floor in [0, 1].
func (p Power) Validate() error {
	if !(p.IdleW > 0) || !(p.BoardW > p.IdleW) || math.IsInf(p.BoardW, 0) {
		return fmt.Errorf("power: idle %g W and board %g W: need 0 < idle < board, finite", p.IdleW, p.BoardW)
	}
	if !(p.MemoryBoundFloor >= 0 && p.MemoryBoundFloor <= 1) {
		return fmt.Errorf("power: memory-bound floor %g: must be in [0, 1]", p.MemoryBoundFloor)
	}
	return nil
}

// builtinPower are the built-in GPU profiles' power figures, kept apart from the profile table
// (profiles.go) so that the two are edited independently.
//
// Board power: NVIDIA's data sheets give the maximum TDP of the SXM form factors — A100 80GB
// SXM 400 W (NVIDIA A100 Tensor Core GPU data sheet), H100 SXM "up to 700 W (configurable)"
// (NVIDIA H100 Tensor Core GPU data sheet), H200 SXM "up to 700 W (configurable)" (NVIDIA H200
// Tensor Core GPU data sheet).
//
// Idle power is not in any data sheet: the figures are rounded public nvidia-smi readings of
// idle SXM boards with memory allocated (H200 about 80 W idle in a published vLLM power ladder;
// H100 SXM and A100 SXM idle readings commonly reported near 70 W and 60 W). nvidia-smi's
// reading itself samples only part of each second on A100 and H100 (Yang et al., "Part-time
// Power Measurements: nvidia-smi's Lack of Attention", arXiv 2312.02741), so treat them as
// ±20 W.
var builtinPower = map[string]Power{
	"a100-80gb": {IdleW: 60, BoardW: 400, Source: "board: NVIDIA A100 data sheet (SXM 400 W); idle: public nvidia-smi readings (≈60 W)"},
	"h100-sxm":  {IdleW: 70, BoardW: 700, Source: "board: NVIDIA H100 data sheet (SXM up to 700 W); idle: public nvidia-smi readings (≈70 W)"},
	"h200":      {IdleW: 80, BoardW: 700, Source: "board: NVIDIA H200 data sheet (SXM up to 700 W); idle: public nvidia-smi readings (≈80 W)"},
}

// PowerOf returns the power model of GPU g: its own when set (GPU.Power, by a Go caller), else
// the built-in figures for its name; ok is false when neither is known or g's own do not
// validate. Profile files carry no power figures: a GPU they define under a built-in name
// (a calibrated h100-sxm) gets the built-in figures.
func PowerOf(g GPU) (p Power, ok bool) {
	if g.Power != (Power{}) {
		return g.Power, g.Power.Validate() == nil
	}
	p, ok = builtinPower[strings.ToLower(g.Name)]
	return p, ok
}
