package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/workloads"
)

// probeFlags are gen's flags for the quality probe presets.
type probeFlags struct {
	lengths, temperatures string
	samples               int
}

var probeFlagNames = []string{"probe-lengths", "temperatures", "samples"}

func addProbeFlags(fs *pflag.FlagSet, p *probeFlags) {
	fs.StringVar(&p.lengths, "probe-lengths", "1k,4k,16k,32k", "long-context-probe: document lengths in tokens, comma-separated (k = 1024)")
	fs.StringVar(&p.temperatures, "temperatures", "", "quality probes: a temperature sweep, e.g. 0,0.5,1,1.5 (each probe repeated at each; class gets /t=T); default: greedy only")
	fs.IntVar(&p.samples, "samples", 1, "quality probes: requests per probe and temperature, seeded 1..N (stability across samples)")
}

// unused refuses the probe flags with a preset that is not a probe.
func (p *probeFlags) unused(changed func(string) bool) error {
	for _, n := range probeFlagNames {
		if changed(n) {
			return fmt.Errorf("--%s applies to the quality probe presets (%s)", n, strings.Join(workloads.ProbePresets, ", "))
		}
	}
	return nil
}

// classFlags shape a spec's classes; they mean nothing to a probe preset.
var classFlags = []string{"spec", "print-spec", "input", "output", "correlation", "weights", "class", "prefix-groups",
	"prefix-tokens", "prefix-zipf", "prefix-fraction", "session-turns", "session-input", "think", "tpot-ms", "max-context", "block-tokens"}

// runProbeGen writes a quality probe trace.
func runProbeGen(app *App, o *genOptions) error {
	for _, n := range classFlags {
		if o.changed(n) {
			return fmt.Errorf("--%s shapes a spec's classes; the probe preset %s generates its own requests (its flags: --rate, --duration, --arrival, --seed, --max-requests, --%s)",
				n, o.preset, strings.Join(probeFlagNames, ", --"))
		}
	}
	if o.changed("probe-lengths") && o.preset != "long-context-probe" {
		return fmt.Errorf("--probe-lengths sets the documents of --preset long-context-probe; %s has none", o.preset)
	}
	p, err := o.probeSpec()
	if err != nil {
		return err
	}
	reqs, err := workloads.GenerateProbes(p)
	if err != nil {
		return fmt.Errorf("gen --preset %s: %w", o.preset, err)
	}
	if err := writeTraceOut(app.Stdout, o.out, reqs); err != nil {
		return err
	}
	fmt.Fprintf(app.Stderr, "gen: %s to %s\n", traceLine(reqs), outName(o.out))
	return nil
}

// probeSpec takes the arrivals from the flags as genSpec does (starting from the chat
// preset's Poisson process at 1 request/s for 60 s) and the probe flags.
func (o *genOptions) probeSpec() (workloads.ProbeSpec, error) {
	base := *o
	base.preset = "chat"
	spec, err := genSpec(&base)
	if err != nil {
		return workloads.ProbeSpec{}, err
	}
	p := workloads.ProbeSpec{Preset: o.preset, Seed: spec.Seed, Arrival: spec.Arrival, Duration: spec.Duration(),
		MaxRequests: spec.MaxRequests, Samples: o.probe.samples}
	if o.probe.samples < 1 {
		return p, fmt.Errorf("--samples %d: want at least 1", o.probe.samples)
	}
	for _, s := range strings.Split(o.probe.lengths, ",") {
		n, err := parseTokens(strings.TrimSpace(s))
		if err != nil {
			return p, fmt.Errorf("--probe-lengths %q: %v", clip(o.probe.lengths, 60), err)
		}
		p.Lengths = append(p.Lengths, n)
	}
	if t := strings.TrimSpace(o.probe.temperatures); t != "" {
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
