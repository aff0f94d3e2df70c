package metrics

import (
	"fmt"
	"math"
)

// DefaultInputTolerance is the relative difference between the prompt tokens the trace asked
// for and those the server counted above which a run's inputs are off (InputCheck.Exceeded).
const DefaultInputTolerance = 0.05

// InputCheck compares the prompt lengths llmbench synthesized from the trace's input_tokens
// (Record.IntendedInputTokens) with the server's usage.prompt_tokens for the same requests
// (docs/inputs.md). It covers every phase: a prompt sent at the wrong length is wrong in the
// warm-up too.
type InputCheck struct {
	// Requests is how many succeeded requests had both an intended length and the server's
	// count; Intended and Counted are their totals.
	Requests int   `json:"requests"`
	Intended int64 `json:"intended_tokens"`
	Counted  int64 `json:"server_tokens"`
	// Difference is (Counted - Intended) / Intended.
	Difference float64 `json:"relative_difference"`
	// Outside counts the requests whose own relative difference is beyond Tolerance;
	// MaxDifference is the largest such difference in absolute value (signed).
	Outside       int     `json:"requests_outside_tolerance"`
	MaxDifference float64 `json:"max_relative_difference"`
	// Uncounted is how many requests with an intended length got no usable server count
	// (no usage, or usage rejected): their lengths are unverified.
	Uncounted int `json:"uncounted"`
	// Tolerance is the limit applied (Options.InputTolerance); Exceeded is true when
	// |Difference| is beyond it, and the run then fails (the CLI exits 3).
	Tolerance float64 `json:"tolerance"`
	Exceeded  bool    `json:"exceeded"`
}

// inputTally accumulates an InputCheck over the records.
type inputTally struct {
	c       InputCheck
	maxAbs  float64
	checked bool
}

func (t *inputTally) add(r *Record, tol float64) {
	if r.IntendedInputTokens <= 0 || !r.OK() {
		return
	}
	t.checked = true
	if r.ServerInputTokens < 0 || r.InputSource != InputFromUsage {
		t.c.Uncounted++
		return
	}
	t.c.Requests++
	t.c.Intended += int64(r.IntendedInputTokens)
	t.c.Counted += int64(r.ServerInputTokens)
	d := float64(r.ServerInputTokens-r.IntendedInputTokens) / float64(r.IntendedInputTokens)
	if math.Abs(d) > tol {
		t.c.Outside++
	}
	if math.Abs(d) > t.maxAbs {
		t.maxAbs, t.c.MaxDifference = math.Abs(d), d
	}
}

// check returns the InputCheck, nil when no request had an intended length.
func (t *inputTally) check(tol float64) *InputCheck {
	if !t.checked {
		return nil
	}
	c := t.c
	c.Tolerance = tol
	if c.Intended > 0 {
		c.Difference = float64(c.Counted-c.Intended) / float64(c.Intended)
		c.Exceeded = math.Abs(c.Difference) > tol
	}
	return &c
}

// inputTolerance is opts.InputTolerance, or DefaultInputTolerance when it is not positive.
func (o Options) inputTolerance() float64 {
	if o.InputTolerance > 0 && !math.IsInf(o.InputTolerance, 0) {
		return o.InputTolerance
	}
	return DefaultInputTolerance
}

// inputWarning says, in words, that prompts reached the server at other lengths than the
// trace asked for, or could not be checked.
func inputWarning(c *InputCheck) []string {
	if c == nil {
		return nil
	}
	var w []string
	if c.Exceeded {
		w = append(w, fmt.Sprintf("inputs: the server counted %d prompt tokens where the trace asked for %d (%+.1f%%, tolerance ±%.1f%%; %d of %d requests outside it): the prompts were not sized on the server's tokenizer; pass --tokenizer with the model's tokenizer.json or --prompt-sizing server (docs/inputs.md)",
			c.Counted, c.Intended, 100*c.Difference, 100*c.Tolerance, c.Outside, c.Requests))
	}
	if c.Uncounted > 0 && c.Requests == 0 {
		w = append(w, fmt.Sprintf("inputs: the server reported no prompt_tokens for the %d requests with synthesized prompts, so their lengths are unverified", c.Uncounted))
	}
	return w
}

// InputFailure says why a summary's inputs fail the run ("" when they do not): the server
// counted the synthesized prompts beyond the tolerance.
func InputFailure(s *Summary) string {
	if s == nil || s.Inputs == nil || !s.Inputs.Exceeded {
		return ""
	}
	c := s.Inputs
	return fmt.Sprintf("the server counted %d prompt tokens where the trace asked for %d (%+.1f%%, beyond the input tolerance of %.1f%%)", c.Counted, c.Intended, 100*c.Difference, 100*c.Tolerance)
}

// addInput counts a succeeded request's prompt tokens and their source.
func (g *group) addInput(r *Record) {
	g.okIn += int64(r.InputTokens)
	g.req.InputTokens += int64(r.InputTokens)
	src := r.InputSource
	if src == "" {
		src = "unknown"
	}
	if g.req.InputSource == nil {
		g.req.InputSource = map[string]int{}
	}
	g.req.InputSource[src]++
}

// mergeInputs pools the input checks of several parts of one run (shards): totals add, the
// difference and verdict are recomputed under the first part's tolerance.
func mergeInputs(sums []*Summary) *InputCheck {
	var t inputTally
	tol := 0.0
	for _, s := range sums {
		c := s.Inputs
		if c == nil {
			continue
		}
		if !t.checked {
			tol = c.Tolerance
		}
		t.checked = true
		t.c.Requests += c.Requests
		t.c.Intended += c.Intended
		t.c.Counted += c.Counted
		t.c.Outside += c.Outside
		t.c.Uncounted += c.Uncounted
		if math.Abs(c.MaxDifference) > t.maxAbs {
			t.maxAbs, t.c.MaxDifference = math.Abs(c.MaxDifference), c.MaxDifference
		}
	}
	if tol <= 0 {
		tol = DefaultInputTolerance
	}
	return t.check(tol)
}
