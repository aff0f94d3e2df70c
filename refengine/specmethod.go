package refengine

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/refengine/perf"
)

// DefaultSpecRepetition is the n-gram method's repetition for a request whose class has no
// entry in Config.SpecRepetition.
const DefaultSpecRepetition = 0.5

// resolveSpecMethod checks the speculative method's settings and adds its drafter to the
// performance model's configuration (issue 22, item 5).
func (r *resolved) resolveSpecMethod(pc *perf.Config) error {
	c := r.Config
	m, err := perf.ParseSpecMethod(c.SpecMethod)
	if err != nil {
		return fmt.Errorf("refengine: SpecMethod (--spec-method): %w", err)
	}
	if strings.TrimSpace(c.SpecMethod) == "" && c.SpecDraftModel != "" {
		m = perf.SpecDraft
	}
	r.specMethod = m
	if c.SpecK == 0 {
		if strings.TrimSpace(c.SpecMethod) != "" || len(c.SpecAlphas) > 0 || c.SpecTree != 0 || len(c.SpecRepetition) > 0 {
			return fmt.Errorf("refengine: SpecMethod, SpecAlphas, SpecTree and SpecRepetition (--spec-method, --spec-alpha, --spec-tree, --spec-repetition) need SpecK > 0 (--spec-k, the draft length)")
		}
		return nil
	}
	if len(c.SpecAlphas) > 0 && c.SpecAlpha != 0 {
		return fmt.Errorf("refengine: give SpecAlpha (one acceptance probability) or SpecAlphas (one per position), not both")
	}
	for i, a := range c.SpecAlphas {
		if !(a >= 0 && a <= 1) {
			return fmt.Errorf("refengine: SpecAlphas[%d] = %g: an acceptance probability must be in [0, 1]", i, a)
		}
	}
	if m != perf.SpecDraft && c.SpecDraftModel != "" {
		return fmt.Errorf("refengine: SpecDraftModel (--spec-draft-model) %q is the draft of method %q; method %q has none", c.SpecDraftModel, perf.SpecDraft, m)
	}
	if m != perf.SpecEAGLE && m != perf.SpecMedusa && c.SpecTree != 0 {
		return fmt.Errorf("refengine: SpecTree (--spec-tree) %d: only the eagle and medusa methods verify a tree of candidates", c.SpecTree)
	}
	if m != perf.SpecNgram && len(c.SpecRepetition) > 0 {
		return fmt.Errorf("refengine: SpecRepetition (--spec-repetition) applies to the ngram method only (method is %q)", m)
	}
	if c.SpecTree != 0 && c.SpecTree < c.SpecK {
		return fmt.Errorf("refengine: SpecTree (--spec-tree) %d: a tree SpecK=%d levels deep has at least %d candidates", c.SpecTree, c.SpecK, c.SpecK)
	}
	r.specTree = c.SpecK
	switch m {
	case perf.SpecDraft:
		if c.SpecDraftModel == "" {
			return fmt.Errorf("refengine: the draft method needs SpecDraftModel (--spec-draft-model, a draft model profile, e.g. llama-3.2-1b)")
		}
	case perf.SpecEAGLE:
		r.draft = perf.EAGLEHead(r.model)
		pc.Draft = r.draft
		pc.DraftSharesLMHead = true
	case perf.SpecMedusa:
		pc.DraftHeadParams = perf.MedusaHeadParams(r.model, c.SpecK)
		r.specTree = 4 * c.SpecK
	case perf.SpecNgram:
		if r.alphaGiven || len(c.SpecAlphas) > 0 {
			return fmt.Errorf("refengine: the ngram method's acceptance is the request's repetition (SpecRepetition, --spec-repetition), not SpecAlpha (--spec-alpha)")
		}
		r.SpecAlpha = 0
		for class, rho := range c.SpecRepetition {
			if !(rho >= 0 && rho <= 1) {
				return fmt.Errorf("refengine: SpecRepetition[%q] = %g: a repetition probability must be in [0, 1]", class, rho)
			}
		}
	}
	if c.SpecTree != 0 {
		r.specTree = c.SpecTree
	}
	return nil
}

// repetitionFor is the ngram method's repetition for a request of class.
func (r *resolved) repetitionFor(class string) float64 {
	if rho, ok := r.SpecRepetition[class]; ok {
		return rho
	}
	if rho, ok := r.SpecRepetition[""]; ok {
		return rho
	}
	return DefaultSpecRepetition
}

// specAlphaAt is the acceptance probability of draft position i (0-based) for a request whose
// ngram repetition is rho.
func (c *core) specAlphaAt(i int, rho float64) float64 {
	switch {
	case c.specMethod == perf.SpecNgram:
		return rho
	case len(c.specAlphas) > 0:
		return c.specAlphas[min(i, len(c.specAlphas)-1)]
	}
	return c.specAlpha
}

// ParseSpecAlphas reads "0.8" (one acceptance probability for every position) or
// "0.9,0.8,0.7" (one per draft position, the last repeating), the form of --spec-alpha.
func ParseSpecAlphas(s string) ([]float64, error) {
	var out []float64
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		a, err := strconv.ParseFloat(f, 64)
		if err != nil || !(a >= 0 && a <= 1) {
			return nil, fmt.Errorf("acceptance probability %d %q: want a number in [0, 1] (e.g. 0.8, or 0.9,0.8,0.7 per position)", i+1, clipSpec(f))
		}
		out = append(out, a)
	}
	return out, nil
}

// ParseSpecRepetition reads the ngram method's repetition: "0.6" for every request, or
// "rag=0.8,code=0.6,0.3" (class=probability entries; a bare number is the default for other
// classes).
func ParseSpecRepetition(s string) (map[string]float64, error) {
	out := map[string]float64{}
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		class, v, ok := strings.Cut(f, "=")
		if !ok {
			class, v = "", f
		}
		class = strings.TrimSpace(class)
		rho, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(rho >= 0 && rho <= 1) {
			return nil, fmt.Errorf("entry %d %q: want CLASS=P or P with P a probability in [0, 1] (e.g. rag=0.8,0.3)", i+1, clipSpec(f))
		}
		if _, dup := out[class]; dup {
			name := class
			if name == "" {
				name = "(default)"
			}
			return nil, fmt.Errorf("entry %d: class %q given twice", i+1, clipSpec(name))
		}
		out[class] = rho
	}
	return out, nil
}

// FormatSpecRepetition writes m in ParseSpecRepetition's form, classes sorted, the default
// last.
func FormatSpecRepetition(m map[string]float64) string {
	var parts []string
	for class, rho := range m {
		if class != "" {
			parts = append(parts, fmt.Sprintf("%s=%g", class, rho))
		}
	}
	sort.Strings(parts)
	if rho, ok := m[""]; ok {
		parts = append(parts, fmt.Sprintf("%g", rho))
	}
	return strings.Join(parts, ",")
}

func clipSpec(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
