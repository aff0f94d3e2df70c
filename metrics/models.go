package metrics

import "sort"

// Per-model breakdown (issue 38). When a run's records name more than one model or LoRA
// adapter (Record.Model; "" is the run's --model, keyed DefaultModelKey), the summary's
// by_model block has the headline blocks per model, and a comparison lists per-model rows
// built from its two sides' blocks (ModelDelta). Like by_class, it is bounded: models past
// the first MaxModels seen are counted together under otherClass.

// DefaultModelKey is the by_model key of records sent to the run's --model (no model field).
const DefaultModelKey = "(--model)"

// MaxModels bounds by_model.
const MaxModels = MaxClasses

// modelKey is r's by_model key.
func modelKey(r *Record) string {
	if r.Model == "" {
		return DefaultModelKey
	}
	return r.Model
}

// modelGroup returns the by_model group of a steady record (nil for other phases, or when
// not creating and the group does not exist).
func (s *summarizer) modelGroup(r *Record, create bool) *group {
	if r.Phase != PhaseSteady {
		return nil
	}
	if s.models == nil {
		s.models = map[string]*group{}
	}
	key := modelKey(r)
	g := s.models[key]
	if g == nil && len(s.models) >= MaxModels {
		key = otherClass
		g = s.models[key]
	}
	if g == nil && create {
		g = newGroup()
		s.models[key] = g
	}
	return g
}

// byModel builds Summary.ByModel: nil unless the steady records named more than one model.
func (s *summarizer) byModel(h *group) map[string]*ClassSummary {
	if len(s.models) < 2 {
		return nil
	}
	out := make(map[string]*ClassSummary, len(s.models))
	for name, g := range s.models {
		g.settleBursts()
		ms := &ClassSummary{
			Requests:   g.requests(),
			Throughput: g.throughput(h.winStart, h.winEnd),
			Latency:    g.latency(),
			Stalls:     s.stalls(g),
			Fluidity:   s.fluidity(g),
		}
		ms.Goodput = s.goodput(g, s.opts.SLO.millisMap(), ms.Throughput.WindowS)
		out[name] = ms
	}
	return out
}

// ModelDelta is one model's headline numbers on both sides of a comparison (from each side's
// by_model block): point values, no intervals. A model one side did not send has a nil side.
type ModelDelta struct {
	Model string        `json:"model"`
	Base  *ModelNumbers `json:"base"`
	Cand  *ModelNumbers `json:"cand"`
}

// ModelNumbers are a model's headline numbers (latencies in ms, throughput per second).
type ModelNumbers struct {
	Requests     int     `json:"requests"`
	Failed       int     `json:"failed"`
	TTFTP50      float64 `json:"ttft_p50_ms"`
	TTFTP99      float64 `json:"ttft_p99_ms"`
	TPOTP50      float64 `json:"tpot_p50_ms"`
	TPOTP99      float64 `json:"tpot_p99_ms"`
	E2EP50       float64 `json:"e2e_p50_ms"`
	E2EP99       float64 `json:"e2e_p99_ms"`
	OutputTokens float64 `json:"output_tokens_per_s"`
}

// NumbersOf is the headline numbers of one by_model (or by_class) block.
func NumbersOf(c *ClassSummary) *ModelNumbers {
	if c == nil {
		return nil
	}
	l := c.Latency
	return &ModelNumbers{Requests: c.Requests.Total, Failed: c.Requests.Failed,
		TTFTP50: l.TTFT.P50, TTFTP99: l.TTFT.P99, TPOTP50: l.TPOT.P50, TPOTP99: l.TPOT.P99,
		E2EP50: l.E2E.P50, E2EP99: l.E2E.P99, OutputTokens: c.Throughput.OutputTokensPerS}
}

// CompareModels lists the models of either summary's by_model block, sorted by name; nil
// when neither side sent more than one model.
func CompareModels(base, cand *Summary) []ModelDelta {
	if base == nil || cand == nil || (len(base.ByModel) == 0 && len(cand.ByModel) == 0) {
		return nil
	}
	names := map[string]bool{}
	for n := range base.ByModel {
		names[n] = true
	}
	for n := range cand.ByModel {
		names[n] = true
	}
	out := make([]ModelDelta, 0, len(names))
	for n := range names {
		out = append(out, ModelDelta{Model: n, Base: NumbersOf(base.ByModel[n]), Cand: NumbersOf(cand.ByModel[n])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out
}
