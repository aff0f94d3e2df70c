package workloads

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/llmbench/llmbench/traces"
)

// Spec describes a synthetic workload completely: Generate(spec) is a pure function of it. Its
// JSON form is the spec file `llmbench gen --spec` reads (`llmbench gen --print-spec` writes it).
type Spec struct {
	// Seed makes everything reproducible.
	Seed int64 `json:"seed"`
	// DurationS is the length of the trace in seconds: arrivals fall in [0, DurationS).
	DurationS float64 `json:"duration_s"`
	// MaxRequests caps the number of requests (0 = no cap); the earliest are kept.
	MaxRequests int `json:"max_requests,omitempty"`
	// Arrival is the arrival process of requests, or of sessions for session classes.
	Arrival ArrivalSpec `json:"arrival"`
	// BlockTokens is the number of prompt tokens per hash_ids block (default 512, as Mooncake).
	BlockTokens int `json:"block_tokens,omitempty"`
	// Classes are the request classes, chosen per arrival in proportion to their weights.
	Classes []ClassSpec `json:"classes"`

	// Cancel, when set, makes a seeded share of the requests cancelled by the client
	// (cancel.go; gen --cancel).
	Cancel *CancelSpec `json:"cancel,omitempty"`
}

// ClassSpec is one kind of request.
type ClassSpec struct {
	// Name is the class tag written to each request ("chat", "rag", ...).
	Name string `json:"name"`
	// Weight is the class's share of arrivals (relative; default 1).
	Weight float64 `json:"weight,omitempty"`
	// Input is the prompt length in tokens (with Prefix: the part after the shared prefix).
	Input Dist `json:"input"`
	// Output is the number of tokens to generate.
	Output Dist `json:"output"`
	// Correlation in [-1, 1] couples input and output lengths through a Gaussian copula
	// (0 = independent). The rank correlation is about (6/π)·asin(ρ/2).
	Correlation float64 `json:"correlation,omitempty"`
	// Prefix gives requests a shared prefix from one of several groups.
	Prefix *PrefixSpec `json:"prefix,omitempty"`
	// Session makes each arrival a multi-turn session with growing context.
	Session *SessionSpec `json:"session,omitempty"`
	// Temperature, when set, is written to every request of the class.
	Temperature *float64 `json:"temperature,omitempty"`

	// Images makes each request multimodal (images.go); not with Session.
	Images *ImageSpec `json:"images,omitempty"`

	// Models, when set, sends each arrival (all turns of a session) to one of these models or
	// LoRA adapters, drawn in proportion to the weights (models.go; issue 38); empty: the
	// run's --model.
	Models []ModelWeight `json:"models,omitempty"`
}

// PrefixSpec describes shared-prefix groups (system prompts, few-shot examples, tool lists):
// each request draws a group and starts with that group's prefix, which becomes its leading
// hash_ids, so prompt synthesis gives every member of a group byte-identical leading text.
type PrefixSpec struct {
	// Groups is the number of distinct prefixes.
	Groups int `json:"groups"`
	// Tokens is the prefix length, rounded up to whole blocks of Spec.BlockTokens.
	Tokens int `json:"tokens"`
	// Zipf is the popularity exponent: group g (from 0) is drawn with weight (g+1)^-Zipf;
	// 0 draws groups uniformly.
	Zipf float64 `json:"zipf,omitempty"`
	// Fraction of the class's requests that use a prefix (default 1).
	Fraction float64 `json:"fraction,omitempty"`
}

// SessionSpec describes multi-turn sessions. Turn 1 has Input tokens (plus the prefix); turn
// k+1's prompt is turn k's prompt, turn k's output and NewInput more tokens, so its hash_ids
// extend turn k's. Turn k+1 arrives at turn k's arrival + output_k × TPOTMS + think_k
// (a session-aware replayer can instead wait think_s after turn k completes).
type SessionSpec struct {
	// Turns is the number of turns per session (at least 1).
	Turns Dist `json:"turns"`
	// NewInput is the number of tokens added by each later turn (user message, tool result).
	NewInput Dist `json:"new_input"`
	// ThinkMS is the think or tool time between a response and the next turn, in milliseconds.
	ThinkMS Dist `json:"think_ms"`
	// TPOTMS is the assumed time per output token used to place later turns (default 20).
	TPOTMS float64 `json:"tpot_ms,omitempty"`
	// MaxInput ends a session before a turn whose prompt would exceed it (0 = no limit).
	MaxInput int `json:"max_input,omitempty"`

	// Agentic sessions. ToolMS, when set, is the agent's tool time before each later call
	// (tool_delay_s, on top of think_ms). FanOut, with probability FanOutProb after each turn
	// but the last, spawns that many sub-agent calls: each waits for the turn (after) plus a
	// tool delay and extends its context (prompt, output, new input: its hash_ids extend the
	// turn's), and the next turn joins them all, its context holding the turn's and every
	// sub-agent's output.
	ToolMS     Dist    `json:"tool_ms,omitempty"`
	FanOutProb float64 `json:"fan_out_prob,omitempty"`
	FanOut     Dist    `json:"fan_out,omitempty"`
}

// Duration returns DurationS as a time.Duration.
func (s *Spec) Duration() time.Duration { return time.Duration(math.Round(s.DurationS * 1e9)) }

// SetDuration sets DurationS.
func (s *Spec) SetDuration(d time.Duration) { s.DurationS = d.Seconds() }

// ParseSpec reads a JSON spec; unknown fields are errors. name is used in errors.
func ParseSpec(r io.Reader, name string) (Spec, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return Spec{}, fmt.Errorf("read spec %s: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return Spec{}, fmt.Errorf("spec %s:%d: %w", name, 1+bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n")), err)
		}
		return Spec{}, fmt.Errorf("spec %s: %w", name, err)
	}
	if err := s.Validate(); err != nil {
		return Spec{}, fmt.Errorf("spec %s: %w", name, err)
	}
	return s, nil
}

// WriteSpec writes spec as indented JSON.
func WriteSpec(w io.Writer, s Spec) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(s)
}

// Validate checks the spec; Generate calls it too.
func (s *Spec) Validate() error {
	if !(s.DurationS > 0) || !finite(s.DurationS) || s.DurationS > 1e8 {
		return fmt.Errorf("duration must be > 0 seconds (got %v; set --duration)", s.DurationS)
	}
	if s.MaxRequests < 0 {
		return fmt.Errorf("max_requests must be >= 0 (got %d)", s.MaxRequests)
	}
	if s.BlockTokens != 0 && (s.BlockTokens < 16 || s.BlockTokens > MaxPromptTokens) {
		return fmt.Errorf("block_tokens must be 0 (default 512) or in [16, %d] (got %d)", MaxPromptTokens, s.BlockTokens)
	}
	if err := s.Arrival.check(); err != nil {
		return err
	}
	if len(s.Classes) == 0 {
		return fmt.Errorf("a spec needs at least one class")
	}
	if s.Cancel != nil {
		if err := s.Cancel.check(); err != nil {
			return err
		}
	}
	names := map[string]bool{}
	var total float64
	for i := range s.Classes {
		c := &s.Classes[i]
		if err := c.check(); err != nil {
			return fmt.Errorf("class %d (%q): %w", i+1, c.Name, err)
		}
		if names[c.Name] {
			return fmt.Errorf("class %q appears twice", c.Name)
		}
		names[c.Name] = true
		total += c.weight()
	}
	if !(total > 0) {
		return fmt.Errorf("class weights must not all be 0")
	}
	return nil
}

func (c *ClassSpec) weight() float64 {
	if c.Weight == 0 {
		return 1
	}
	return c.Weight
}

func (c *ClassSpec) check() error {
	if c.Name == "" {
		return fmt.Errorf("missing name")
	}
	if c.Weight < 0 || !finite(c.Weight) {
		return fmt.Errorf("weight must be >= 0")
	}
	if c.Input.IsZero() || c.Output.IsZero() {
		return fmt.Errorf("needs input and output length distributions")
	}
	for _, d := range []Dist{c.Input, c.Output} {
		if err := d.check(); err != nil {
			return err
		}
	}
	if !(c.Correlation >= -1 && c.Correlation <= 1) {
		return fmt.Errorf("correlation must be in [-1, 1] (got %v)", c.Correlation)
	}
	if c.Temperature != nil && !(*c.Temperature >= 0) {
		return fmt.Errorf("temperature must be >= 0")
	}
	if err := checkModels(c.Models); err != nil {
		return err
	}
	if p := c.Prefix; p != nil {
		if p.Groups < 1 || p.Tokens < 1 {
			return fmt.Errorf("prefix needs groups >= 1 and tokens >= 1")
		}
		if !(p.Zipf >= 0) || !finite(p.Zipf) || !(p.Fraction >= 0 && p.Fraction <= 1) {
			return fmt.Errorf("prefix zipf must be >= 0 and fraction in [0, 1]")
		}
		if p.Tokens > MaxPromptTokens || p.Groups > 1_000_000 || int64(p.Groups)*int64(p.Tokens) > 1<<26 {
			return fmt.Errorf("prefix groups × tokens must stay below 2^26 (at most %d tokens, 1000000 groups)", MaxPromptTokens)
		}
	}
	if s := c.Session; s != nil {
		if s.Turns.IsZero() || s.NewInput.IsZero() || s.ThinkMS.IsZero() {
			return fmt.Errorf("session needs turns, new_input and think_ms distributions")
		}
		for _, d := range []Dist{s.Turns, s.NewInput, s.ThinkMS} {
			if err := d.check(); err != nil {
				return err
			}
		}
		if !(s.TPOTMS >= 0) || !finite(s.TPOTMS) || s.MaxInput < 0 {
			return fmt.Errorf("session tpot_ms and max_input must be >= 0")
		}
		for _, d := range []Dist{s.ToolMS, s.FanOut} {
			if !d.IsZero() {
				if err := d.check(); err != nil {
					return err
				}
			}
		}
		if !(s.FanOutProb >= 0 && s.FanOutProb <= 1) || s.FanOutProb > 0 && s.FanOut.IsZero() {
			return fmt.Errorf("session fan_out_prob must be in [0, 1] and needs a fan_out distribution")
		}
	}
	if im := c.Images; im != nil {
		if c.Session != nil {
			return fmt.Errorf("images and session cannot be combined (a session's turns carry text only)")
		}
		if err := im.check(); err != nil {
			return err
		}
	}
	return nil
}

// ResolveEmpirical fills the values of every empirical distribution that names a trace file
// (Dist.From) with that trace's input lengths (for Input and NewInput) or output lengths (for
// Output), reading traces through load. Turns and think times cannot be empirical from a trace.
func (s *Spec) ResolveEmpirical(load func(path string) ([]traces.Request, error)) error {
	cache := map[string][]traces.Request{}
	fill := func(d *Dist, what string, pick func(*traces.Request) int) error {
		if d.Kind != Empirical || d.From == "" || len(d.Values) > 0 {
			return nil
		}
		if pick == nil {
			return fmt.Errorf("%s: empirical values can only come from a trace for input and output lengths; list them with empirical:values=...", what)
		}
		reqs, ok := cache[d.From]
		if !ok {
			var err error
			if reqs, err = load(d.From); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			cache[d.From] = reqs
		}
		for i := range reqs {
			d.Values = append(d.Values, pick(&reqs[i]))
		}
		return nil
	}
	in := func(r *traces.Request) int { return r.InputTokens }
	out := func(r *traces.Request) int { return r.OutputTokens }
	for i := range s.Classes {
		c := &s.Classes[i]
		if err := fill(&c.Input, c.Name+" input", in); err != nil {
			return err
		}
		if err := fill(&c.Output, c.Name+" output", out); err != nil {
			return err
		}
		if c.Session != nil {
			if err := fill(&c.Session.NewInput, c.Name+" new_input", in); err != nil {
				return err
			}
			if err := fill(&c.Session.Turns, c.Name+" turns", nil); err != nil {
				return err
			}
			if err := fill(&c.Session.ThinkMS, c.Name+" think_ms", nil); err != nil {
				return err
			}
		}
	}
	return nil
}
