package refengine

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/tokenizer"
)

// Quality is the engine's seeded error model: how often an answer the engine reads from the
// prompt (a long-context lookup, a tool call, a structured JSON output; see the package doc,
// "Answers") comes out wrong. The zero value is off: every answer is right.
//
// A request's error probability is
//
//	p = min(0.95, base × dtype × (1 + Temp·T))
//
// where T is its temperature, dtype the multiplier of the weight dtype (1 for bf16, FP8, INT8
// or INT4 otherwise) and base the task's rate: Tool for a first tool call, Retry for a tool
// call after an error message, JSON for a response_format output, and for a lookup in a
// document of L prompt tokens at relative depth d (0 = the first byte, 1 = the last)
//
//	base = Recall + Middle · 4d(1−d) · L / (L + HalfContext)
//
// (a U-shaped recall curve, "lost in the middle", that deepens with the context length). The
// request fails when a uniform draw u < p; u is keyed by Seed and the request's output seed
// (Timeline.OutputSeed), so a request fails the same way on every replay, a greedy request
// fails on every configuration where its p is at least as high (errors are nested: what BF16
// gets wrong, INT4 gets wrong too), and a sampled request (T > 0, another seed) redraws.
type Quality struct {
	// On enables the model; with On false every answer is right.
	On bool
	// Recall is the error of a lookup at the edges of a short document; Middle the extra
	// error at its middle at long context, HalfContext (tokens) the context length at which
	// the middle dip is half as deep as it can get.
	Recall, Middle float64
	HalfContext    int
	// Tool, Retry and JSON are the base errors of a first-round tool call, a retried tool
	// call and a structured output.
	Tool, Retry, JSON float64
	// Temp is the error's growth per unit of temperature.
	Temp float64
	// FP8, INT8 and INT4 multiply the error of an engine whose weights are in that dtype.
	FP8, INT8, INT4 float64
	// Seed seeds the draws (0: the engine's Config.Seed).
	Seed uint64
}

// DefaultQuality is the error model of "--quality on". The rates are assumptions of the
// right order, not measurements of a model: a lookup fails 1% of the time at the edges of a
// short document and up to 26% in the middle of a very long one; a first tool call 5%, a retry
// after an error message 3%, a JSON output 2%; errors grow 1.5× per unit of temperature and
// 1.5× (FP8), 2× (INT8) and 3× (INT4) under weight quantization.
func DefaultQuality() Quality {
	return Quality{On: true, Recall: 0.01, Middle: 0.25, HalfContext: 16384, Tool: 0.05, Retry: 0.03,
		JSON: 0.02, Temp: 1.5, FP8: 1.5, INT8: 2, INT4: 3}
}

// qualityKeys are the keys of ParseQuality after "on".
var qualityKeys = map[string]func(q *Quality) *float64{
	"recall": func(q *Quality) *float64 { return &q.Recall },
	"middle": func(q *Quality) *float64 { return &q.Middle },
	"tool":   func(q *Quality) *float64 { return &q.Tool },
	"retry":  func(q *Quality) *float64 { return &q.Retry },
	"json":   func(q *Quality) *float64 { return &q.JSON },
}

var qualityFactors = map[string]func(q *Quality) *float64{
	"temp": func(q *Quality) *float64 { return &q.Temp },
	"fp8":  func(q *Quality) *float64 { return &q.FP8 },
	"int8": func(q *Quality) *float64 { return &q.INT8 },
	"int4": func(q *Quality) *float64 { return &q.INT4 },
}

func qualityKeyList() string {
	var keys []string
	for k := range qualityKeys {
		keys = append(keys, k)
	}
	for k := range qualityFactors {
		keys = append(keys, k)
	}
	keys = append(keys, "half", "seed")
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// ParseQuality parses an error-model spec: "off" (or empty: every answer right), "on"
// (DefaultQuality), or comma-separated key=value items that change DefaultQuality: rates
// recall, middle, tool, retry, json (fractions such as 0.05 or 5%), half (tokens, such as
// 16384 or 16k), temp (error growth per unit of temperature), fp8, int8, int4 (error
// multipliers, >= 1) and seed. "on," may lead the items.
func ParseQuality(spec string) (Quality, error) {
	spec = strings.TrimSpace(spec)
	switch strings.ToLower(spec) {
	case "", "off":
		return Quality{}, nil
	case "on":
		return DefaultQuality(), nil
	}
	q := DefaultQuality()
	seen := map[string]bool{}
	for i, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if i == 0 && strings.EqualFold(item, "on") {
			continue
		}
		key, val, ok := strings.Cut(item, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		if item == "" || !ok {
			return Quality{}, fmt.Errorf("quality: item %d %s: want on, off or key=value items (keys: %s)", i+1, safetext.Quote(item, 24), qualityKeyList())
		}
		if seen[key] {
			return Quality{}, fmt.Errorf("quality: %s is given twice", safetext.Quote(key, 24))
		}
		seen[key] = true
		switch {
		case qualityKeys[key] != nil:
			v, err := parseFraction(val)
			if err != nil {
				return Quality{}, fmt.Errorf("quality: %s=%s: %v", key, safetext.Quote(val, 24), err)
			}
			*qualityKeys[key](&q) = v
		case qualityFactors[key] != nil:
			v, err := strconv.ParseFloat(val, 64)
			min := 1.0
			if key == "temp" {
				min = 0
			}
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < min {
				return Quality{}, fmt.Errorf("quality: %s=%s: want a number >= %g", key, safetext.Quote(val, 24), min)
			}
			*qualityFactors[key](&q) = v
		case key == "half":
			n, err := parseTokenCount(val)
			if err != nil {
				return Quality{}, fmt.Errorf("quality: half=%s: %v", safetext.Quote(val, 24), err)
			}
			q.HalfContext = n
		case key == "seed":
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return Quality{}, fmt.Errorf("quality: seed=%s: want a non-negative integer", safetext.Quote(val, 24))
			}
			q.Seed = n
		default:
			return Quality{}, fmt.Errorf("quality: unknown key %s in %s; keys: %s (or on, off)", safetext.Quote(key, 24), safetext.Quote(item, 24), qualityKeyList())
		}
	}
	return q, nil
}

// parseTokenCount reads "16384" or "16k" (×1024).
func parseTokenCount(s string) (int, error) {
	scale := 1
	if t, ok := strings.CutSuffix(strings.ToLower(s), "k"); ok {
		s, scale = t, 1024
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > 1<<30/scale {
		return 0, fmt.Errorf("want a positive token count such as 16384 or 16k")
	}
	return n * scale, nil
}

func (q Quality) validate() error {
	if !q.On {
		return nil
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"Recall", q.Recall}, {"Middle", q.Middle}, {"Tool", q.Tool}, {"Retry", q.Retry}, {"JSON", q.JSON}} {
		if !(f.v >= 0 && f.v <= 1) {
			return fmt.Errorf("refengine: Quality.%s %g: must be in [0, 1]", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"FP8", q.FP8}, {"INT8", q.INT8}, {"INT4", q.INT4}} {
		if f.v != 0 && !(f.v >= 1 && !math.IsInf(f.v, 0)) {
			return fmt.Errorf("refengine: Quality.%s %g: must be >= 1 (0: 1)", f.name, f.v)
		}
	}
	if !(q.Temp >= 0 && !math.IsInf(q.Temp, 0)) || q.HalfContext < 0 {
		return fmt.Errorf("refengine: Quality.Temp and Quality.HalfContext must be >= 0")
	}
	return nil
}

// String returns the spec ParseQuality turns back into q ("off" when off).
func (q Quality) String() string {
	if !q.On {
		return "off"
	}
	if q == DefaultQuality() {
		return "on"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	s := fmt.Sprintf("recall=%s,middle=%s,half=%d,tool=%s,retry=%s,json=%s,temp=%s,fp8=%s,int8=%s,int4=%s",
		f(q.Recall), f(q.Middle), q.HalfContext, f(q.Tool), f(q.Retry), f(q.JSON), f(q.Temp), f(q.FP8), f(q.INT8), f(q.INT4))
	if q.Seed != 0 {
		s += ",seed=" + strconv.FormatUint(q.Seed, 10)
	}
	return s
}

// Task kinds of the error model, also the salts of its draws.
const (
	taskRecall = 1 + iota
	taskTool
	taskRetry
	taskJSON
)

// errorModel is a Quality bound to one engine: its dtype multiplier and seed.
type errorModel struct {
	q     Quality
	dtype float64
	seed  uint64
}

func newErrorModel(q Quality, weightDtype string, engineSeed uint64) *errorModel {
	m := &errorModel{q: q, dtype: 1, seed: q.Seed}
	if m.seed == 0 {
		m.seed = engineSeed
	}
	pick := func(v float64) float64 {
		if v == 0 {
			return 1
		}
		return v
	}
	switch strings.ToLower(weightDtype) {
	case "fp8":
		m.dtype = pick(q.FP8)
	case "int8":
		m.dtype = pick(q.INT8)
	case "int4":
		m.dtype = pick(q.INT4)
	}
	return m
}

// prob is the error probability of a task with base rate base at temperature t.
func (m *errorModel) prob(base, t float64) float64 {
	if m == nil || !m.q.On {
		return 0
	}
	return min(0.95, base*m.dtype*(1+m.q.Temp*t))
}

// recallBase is the base error of a lookup at relative depth d in a prompt of n tokens.
func (m *errorModel) recallBase(d float64, n int) float64 {
	d = min(1, max(0, d))
	half := float64(m.q.HalfContext)
	ctx := 1.0
	if half > 0 {
		ctx = float64(n) / (float64(n) + half)
	}
	return m.q.Recall + m.q.Middle*4*d*(1-d)*ctx
}

// draw returns two uniform numbers in [0, 1) for a request with output seed key and a task:
// the first decides whether it fails, the second how.
func (m *errorModel) draw(key uint64, task int) (float64, float64) {
	if m == nil {
		return 1, 0
	}
	x := tokenizer.Mix(m.seed ^ tokenizer.Mix(key^uint64(task)*0x9e3779b97f4a7c15))
	y := tokenizer.Mix(x ^ 0x243f6a8885a308d3)
	return float64(x>>11) / (1 << 53), float64(y>>11) / (1 << 53)
}

// fails reports whether the task fails for key with probability p, and the mode draw.
func (m *errorModel) fails(key uint64, task int, p float64) (bool, float64) {
	if p <= 0 {
		return false, 0
	}
	u, v := m.draw(key, task)
	return u < p, v
}
