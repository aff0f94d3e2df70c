package calibrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/llmbench/llmbench/refengine/perf"
)

// Calibration is the "calibration" block of a profile file calibrate writes: what the fit
// learned of the deployment besides the GPU's constants, so that --profiles alone reproduces
// it. The perf package carries the block without reading it.
type Calibration struct {
	// GPU is the profile the block belongs to.
	GPU string `json:"gpu"`
	// MaxNumSeqs is the learned cap on running sequences (0: none learned, the engine's
	// default or --max-num-seqs applies). An explicit --max-num-seqs wins over it.
	MaxNumSeqs int `json:"max_num_seqs,omitempty"`
	// CapSource says where MaxNumSeqs came from (Result.CapSource), CapDeclaredBy the
	// server's field when it declared the cap.
	CapSource     string `json:"cap_source,omitempty"`
	CapDeclaredBy string `json:"cap_declared_by,omitempty"`
	// MaxNumBatchedTokens is the learned token budget per step (0: none learned); an
	// explicit --max-num-batched-tokens wins over it.
	MaxNumBatchedTokens int `json:"max_num_batched_tokens,omitempty"`
	// MaxModelLen is the longest request the server declares (Result.MaxModelLen; 0: none);
	// an explicit --max-model-len wins over it.
	MaxModelLen int `json:"max_model_len,omitempty"`
	// FrontEndUS is the fitted time before the engine sees a request, in µs; informative only
	// (simulate's times are the engine's).
	FrontEndUS float64 `json:"front_end_us,omitempty"`
	// Residuals and Warnings are the fit's own error on the runs it fitted (Result.Residuals,
	// Result.Warnings): read them before trusting the profile.
	Residuals []Residual `json:"residuals,omitempty"`
	Warnings  []string   `json:"warnings,omitempty"`
	// Notes are what the fit said of the servers' declarations (Result.Notes).
	Notes []string `json:"notes,omitempty"`
}

// maxCap bounds a max_num_seqs read from a file (refengine takes any positive cap; a
// larger one than this is a corrupt file, not a server).
const maxCap = 1 << 20

// FormatProfile encodes the fitted GPU profile (with models, when the fit was given one's
// architecture) and the calibration block of res in the file format perf.ParseProfiles reads.
func FormatProfile(models []perf.Model, res *Result) ([]byte, error) {
	data, err := perf.FormatProfiles(models, []perf.GPU{res.GPU})
	if err != nil {
		return nil, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	c := Calibration{GPU: res.GPU.Name, MaxNumSeqs: res.MaxNumSeqs, CapSource: res.CapSource, CapDeclaredBy: res.CapDeclaredBy,
		MaxNumBatchedTokens: res.MaxNumBatchedTokens, MaxModelLen: res.MaxModelLen,
		FrontEndUS: float64(res.FrontEnd) / 1e3, Residuals: res.Residuals, Warnings: res.Warnings, Notes: res.Notes}
	if doc["calibration"], err = json.Marshal(c); err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	return append(out, '\n'), nil
}

// ParseProfileCalibration returns the calibration block of a profile file (nil when it has
// none); name (usually the file's path) prefixes every error. Only the block is checked here:
// perf.ParseProfiles checks the rest.
func ParseProfileCalibration(data []byte, name string) (*Calibration, error) {
	var doc struct {
		Calibration json.RawMessage `json:"calibration"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: invalid profile JSON: %w", name, err)
	}
	if len(doc.Calibration) == 0 || string(doc.Calibration) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc.Calibration))
	dec.DisallowUnknownFields()
	var c Calibration
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: calibration: %w", name, err)
	}
	if c.MaxNumSeqs < 0 || c.MaxNumSeqs > maxCap {
		return nil, fmt.Errorf("%s: calibration: max_num_seqs must be in [0, %d], got %d", name, maxCap, c.MaxNumSeqs)
	}
	if c.MaxNumBatchedTokens < 0 || c.MaxNumBatchedTokens > maxCap {
		return nil, fmt.Errorf("%s: calibration: max_num_batched_tokens must be in [0, %d], got %d", name, maxCap, c.MaxNumBatchedTokens)
	}
	if c.MaxModelLen < 0 || c.MaxModelLen > maxDeclaredLen {
		return nil, fmt.Errorf("%s: calibration: max_model_len must be in [0, %d], got %d", name, maxDeclaredLen, c.MaxModelLen)
	}
	if math.IsNaN(c.FrontEndUS) || math.IsInf(c.FrontEndUS, 0) || c.FrontEndUS < 0 {
		return nil, fmt.Errorf("%s: calibration: front_end_us must be a number >= 0, got %g", name, c.FrontEndUS)
	}
	return &c, nil
}
