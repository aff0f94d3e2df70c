package usecase

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/workloads"
)

// ProbeOptions are gen's flags for the quality probe presets.
type ProbeOptions struct {
	Lengths, Temperatures string
	Samples               int
}

var probeFlagNames = []string{"probe-lengths", "temperatures", "samples"}

// unused refuses the probe flags with a preset that is not a probe.
func (p *ProbeOptions) unused(changed Changed) error {
	for _, n := range probeFlagNames {
		if changed.Has(n) {
			return fmt.Errorf("--%s applies to the quality probe presets (%s)", n, strings.Join(workloads.ProbePresets, ", "))
		}
	}
	return nil
}

// classFlags shape a spec's classes; they mean nothing to a probe preset.
var classFlags = []string{"spec", "print-spec", "input", "output", "correlation", "weights", "class", "prefix-groups",
	"prefix-tokens", "prefix-zipf", "prefix-fraction", "session-turns", "session-input", "think", "tpot-ms", "max-context", "block-tokens"}

// genProbes writes a quality probe trace.
func genProbes(env *Env, o *GenOptions) error {
	for _, n := range classFlags {
		if o.Changed.Has(n) {
			return fmt.Errorf("--%s shapes a spec's classes; the probe preset %s generates its own requests (its flags: --rate, --duration, --arrival, --seed, --max-requests, --%s)",
				n, o.Preset, strings.Join(probeFlagNames, ", --"))
		}
	}
	if o.Changed.Has("probe-lengths") && o.Preset != "long-context-probe" {
		return fmt.Errorf("--probe-lengths sets the documents of --preset long-context-probe; %s has none", o.Preset)
	}
	p, err := o.probeSpec()
	if err != nil {
		return err
	}
	reqs, err := workloads.GenerateProbes(p)
	if err != nil {
		return fmt.Errorf("gen --preset %s: %w", o.Preset, err)
	}
	if err := writeTraceOut(env.Stdout, o.Out, reqs); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "gen: %s to %s\n", traceLine(reqs), outName(o.Out))
	return nil
}

// probeSpec takes the arrivals from the flags as spec does (starting from the chat preset's
// Poisson process at 1 request/s for 60 s) and the probe flags.
func (o *GenOptions) probeSpec() (workloads.ProbeSpec, error) {
	base := *o
	base.Preset = "chat"
	spec, _, err := base.spec()
	if err != nil {
		return workloads.ProbeSpec{}, err
	}
	p := workloads.ProbeSpec{Preset: o.Preset, Seed: spec.Seed, Arrival: spec.Arrival, Duration: spec.Duration(),
		MaxRequests: spec.MaxRequests, Samples: o.Probe.Samples}
	if o.Probe.Samples < 1 {
		return p, fmt.Errorf("--samples %d: want at least 1", o.Probe.Samples)
	}
	for _, s := range strings.Split(o.Probe.Lengths, ",") {
		n, err := parseTokens(strings.TrimSpace(s))
		if err != nil {
			return p, fmt.Errorf("--probe-lengths %q: %v", clip(o.Probe.Lengths, 60), err)
		}
		p.Lengths = append(p.Lengths, n)
	}
	if t := strings.TrimSpace(o.Probe.Temperatures); t != "" {
		for _, s := range strings.Split(t, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || !(v >= 0 && v <= 2) {
				return p, fmt.Errorf("--temperatures %q: %q is not a temperature in [0, 2]", clip(t, 60), clip(s, 20))
			}
			p.Temperatures = append(p.Temperatures, v)
		}
	}
	return p, nil
}

// parseTokens reads "4096" or "4k".
func parseTokens(s string) (int, error) {
	scale := 1
	if t, ok := strings.CutSuffix(strings.ToLower(s), "k"); ok {
		s, scale = t, 1024
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1<<20/scale {
		return 0, fmt.Errorf("%q is not a token count such as 4096 or 4k", clip(s, 20))
	}
	return n * scale, nil
}
