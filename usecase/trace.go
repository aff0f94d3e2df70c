package usecase

import (
	"errors"
	"fmt"
	"time"

	"github.com/llmbench/llmbench/traces"
)

// The `llmbench trace` subcommands (fetch is in tracefetch.go, stats in tracestats.go).

// TraceIO are the options every transforming trace subcommand shares: the input trace, where
// the result goes (- for stdout) and whether unknown fields are ignored.
type TraceIO struct {
	In, Out string
	Lenient bool
}

// transform reads the trace, applies f and writes the result.
func (t *TraceIO) transform(env *Env, f func([]traces.Request) ([]traces.Request, error)) error {
	reqs, err := traces.ReadFile(t.In, traces.ReadOptions{Lenient: t.Lenient})
	if err != nil {
		return err
	}
	out, err := f(reqs)
	if err != nil {
		return err
	}
	if len(out) == 0 {
		return fmt.Errorf("no requests left in %s after this operation; nothing written", t.In)
	}
	if err := writeTraceOut(env.Stdout, t.Out, out); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "trace: %s to %s\n", traceLine(out), outName(t.Out))
	return nil
}

// TraceScaleOptions are `llmbench trace scale`'s options: exactly one of Factor (a time
// multiplier) or Rate (target requests/s), by Changed.
type TraceScaleOptions struct {
	TraceIO
	Factor, Rate float64
	Changed      Changed
}

// TraceScale stretches or compresses the trace's timeline.
func TraceScale(env *Env, o *TraceScaleOptions) error {
	if o.Changed.Has("factor") == o.Changed.Has("rate") {
		return errors.New("give exactly one of --factor (time multiplier) or --rate (target requests/s)")
	}
	return o.transform(env, func(r []traces.Request) ([]traces.Request, error) {
		if o.Changed.Has("rate") {
			return traces.ScaleToRate(r, o.Rate)
		}
		return traces.Scale(r, o.Factor)
	})
}

// TraceSliceOptions are `llmbench trace slice`'s options: the window [From, To) (To 0: to the
// end), and whether the original offsets are kept.
type TraceSliceOptions struct {
	TraceIO
	From, To    time.Duration
	KeepOffsets bool
}

// TraceSlice keeps the requests arriving in the window.
func TraceSlice(env *Env, o *TraceSliceOptions) error {
	return o.transform(env, func(r []traces.Request) ([]traces.Request, error) {
		return traces.Slice(r, o.From, o.To, !o.KeepOffsets)
	})
}

// TraceSampleOptions are `llmbench trace sample`'s options (traces.SampleOptions).
type TraceSampleOptions struct {
	TraceIO
	N        int
	Fraction float64
	Seed     int64
}

// TraceSample keeps a seeded random subset of the requests (whole sessions together).
func TraceSample(env *Env, o *TraceSampleOptions) error {
	return o.transform(env, func(r []traces.Request) ([]traces.Request, error) {
		return traces.Sample(r, traces.SampleOptions{N: o.N, Fraction: o.Fraction, Seed: o.Seed})
	})
}

// TraceFilterOptions are `llmbench trace filter`'s options.
type TraceFilterOptions struct {
	TraceIO
	Classes []string
	Exclude bool
}

// TraceFilter keeps (or, with Exclude, drops) the requests of the classes.
func TraceFilter(env *Env, o *TraceFilterOptions) error {
	if len(o.Classes) == 0 {
		return errors.New("--class is required (comma-separated; an empty name selects untagged requests)")
	}
	return o.transform(env, func(r []traces.Request) ([]traces.Request, error) {
		return traces.Filter(r, o.Classes, o.Exclude)
	})
}

// TraceValidateOptions are `llmbench trace validate`'s options: the traces, and how many of a
// file's problems are listed (0: all).
type TraceValidateOptions struct {
	Paths     []string
	Lenient   bool
	MaxErrors int
}

// ExitInvalidTrace is trace validate's exit status when a trace is invalid.
const ExitInvalidTrace = 1

// TraceValidate checks each trace against format v1 and prints ok or every problem; the exit
// status is ExitInvalidTrace when any is invalid.
func TraceValidate(env *Env, o *TraceValidateOptions) (int, error) {
	bad := 0
	for _, path := range o.Paths {
		ok, err := o.validate(env, path)
		if err != nil {
			return ExitBadInput, err
		}
		if !ok {
			bad++
		}
	}
	if bad > 0 {
		return ExitInvalidTrace, fmt.Errorf("%d of %d traces are invalid", bad, len(o.Paths))
	}
	return ExitOK, nil
}

// validate checks one trace and prints its problems, or ok and a warning about its span.
func (o *TraceValidateOptions) validate(env *Env, path string) (bool, error) {
	n, probs, err := traces.CheckFile(path, traces.ReadOptions{Lenient: o.Lenient}, o.MaxErrors)
	if err != nil {
		return false, err
	}
	if len(probs) == 0 && n == 0 {
		fmt.Fprintf(env.Stdout, "%s: no requests (every line is blank or a comment)\n", path)
		return false, nil
	}
	for _, p := range probs {
		fmt.Fprintln(env.Stdout, p.Error())
	}
	if len(probs) > 0 {
		if o.MaxErrors > 0 && len(probs) == o.MaxErrors {
			fmt.Fprintf(env.Stdout, "%s: stopped after %d problems (--max-errors)\n", path, o.MaxErrors)
		}
		return false, nil
	}
	fmt.Fprintf(env.Stdout, "%s: ok (%d requests)\n", path, n)
	if src, err := traces.OpenFile(path, traces.ReadOptions{Lenient: o.Lenient}); err == nil {
		if span := TraceSpan(src); span > DefaultMaxSpan {
			fmt.Fprintf(env.Stdout, "%s: warning: a replay would span %v (%.0f s); run, ab and sweep refuse it unless --max-span allows it\n",
				path, span.Round(time.Second), span.Seconds())
		}
	}
	return true, nil
}
