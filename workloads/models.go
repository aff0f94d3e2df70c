package workloads

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Per-request models (issue 38): a class may send its requests to a weighted mix of models or
// LoRA adapters (ClassSpec.Models; gen --models base=6,sql-lora=3,chat-lora=1). Each arrival
// draws one model, from a random stream of its own (so a spec without models generates
// exactly the trace it did before), and every turn of a session keeps its session's model.

// ModelWeight is one model of a class's mix and its share (relative weight > 0).
type ModelWeight struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
}

// modelStream is the random stream of arrival i's model draw (Generate's streams are 1<<40+i
// per arrival; this one never meets them).
func modelStream(i int) uint64 { return 3<<40 + uint64(i) }

// ParseModels parses a mix "NAME=WEIGHT,NAME=WEIGHT,..." (flag names the flag in errors). A
// weight must be a positive finite number; a name may not repeat.
func ParseModels(flag, s string) ([]ModelWeight, error) {
	var out []ModelWeight
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		entry := strings.TrimSpace(part)
		name, w, ok := strings.Cut(entry, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("%s: entry %q is not NAME=WEIGHT (e.g. base=6,sql-lora=3)", flag, entry)
		}
		weight, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		if err != nil || !(weight > 0) || !finite(weight) {
			return nil, fmt.Errorf("%s: entry %q: the weight %q is not a positive number", flag, entry, strings.TrimSpace(w))
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: model %q appears twice", flag, name)
		}
		seen[name] = true
		out = append(out, ModelWeight{Name: name, Weight: weight})
	}
	return out, checkModels(out)
}

// checkModels validates a class's mix: names the trace format accepts, weights > 0.
func checkModels(ms []ModelWeight) error {
	seen := map[string]bool{}
	for i, m := range ms {
		switch {
		case m.Name == "" || len(m.Name) > 256 || strings.TrimSpace(m.Name) != m.Name:
			return fmt.Errorf("models[%d]: name %q must be non-empty, at most 256 bytes, without surrounding spaces", i, m.Name)
		case strings.ContainsFunc(m.Name, unicode.IsControl) || !utf8.ValidString(m.Name):
			return fmt.Errorf("models[%d]: name %q must be UTF-8 without control characters", i, m.Name)
		case !(m.Weight > 0) || !finite(m.Weight):
			return fmt.Errorf("models[%d] (%s): weight must be a positive number (got %v)", i, m.Name, m.Weight)
		case seen[m.Name]:
			return fmt.Errorf("models[%d]: model %q appears twice", i, m.Name)
		}
		seen[m.Name] = true
	}
	return nil
}

// modelCDF is the cumulative, normalized weights of ms (nil for no mix).
func modelCDF(ms []ModelWeight) []float64 {
	if len(ms) == 0 {
		return nil
	}
	cdf := make([]float64, len(ms))
	var sum float64
	for i, m := range ms {
		sum += m.Weight
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return cdf
}

// assignModel sets the model of the requests arrival i added (g.reqs[from:]) from its class's
// mix, when it has one.
func (g *generator) assignModel(cc *compiledClass, i, from int, seed int64) {
	if cc.modelCDF == nil {
		return
	}
	m := cc.spec.Models[pick(cc.modelCDF, newRNG(seed, modelStream(i)).float())].Name
	for k := from; k < len(g.reqs); k++ {
		g.reqs[k].Model = m
	}
}
