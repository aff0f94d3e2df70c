package workloads

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SpecOptions say how to build a Spec (BuildSpec): from a preset or a spec file, with parts
// of it replaced. It is `llmbench gen`'s use case (cmd/llmbench/gen.go fills it from its
// flags): each replacement is named by the gen flag that sets it, applies only when Given
// reports that name, and the errors name the flag.
type SpecOptions struct {
	// Preset names the preset to start from (Preset) when SpecFile is empty.
	Preset string
	// SpecFile is the spec file to start from instead; ReadSpec reads it (the caller opens
	// files: ParseSpec decodes one).
	SpecFile string
	ReadSpec func(path string) (Spec, error)
	// Given says whether the flag name was given; nil: none was.
	Given func(flag string) bool

	Seed        int64         // --seed
	Rate        float64       // --rate
	Duration    time.Duration // --duration
	MaxRequests int           // --max-requests
	BlockTokens int           // --block-tokens

	Arrival   string        // --arrival: the process
	CV        float64       // --cv
	RateEnd   float64       // --rate-end
	On, Off   time.Duration // --on, --off
	Period    time.Duration // --period
	Amplitude float64       // --amplitude

	// Input and Output are length distributions (ParseDist) for every class.
	Input, Output string  // --input, --output
	Correlation   float64 // --correlation
	// Weights keeps the classes named in "a=2,b=1" with those weights; Class renames the
	// only class.
	Weights, Class string // --weights, --class

	PrefixGroups   int     // --prefix-groups: 0 removes shared prefixes
	PrefixTokens   int     // --prefix-tokens
	PrefixZipf     float64 // --prefix-zipf
	PrefixFraction float64 // --prefix-fraction

	// Turns, NewInput and Think are distributions of turns per session, tokens each later
	// turn adds and think time in ms; NewInput and Think are parsed even when not given
	// (their defaults are the sessions' that --session-turns makes).
	Turns, NewInput, Think string  // --session-turns, --session-input, --think
	TPOTMS                 float64 // --tpot-ms
	MaxContext             int     // --max-context

	// Models is a weighted mix of models or LoRA adapters, "base=6,sql-lora=3", that every
	// class's requests are sent to (ParseModels; issue 38).
	Models string // --models
	// Cancel is SHARE:DELAY-DISTRIBUTION (ParseCancel): a seeded share of the requests is
	// cancelled by the client that many ms after sending (cancel.go).
	Cancel string // --cancel
}

// BuildSpec builds the spec o describes and validates it.
func BuildSpec(o SpecOptions) (Spec, error) {
	spec, err := o.base()
	if err != nil {
		return spec, err
	}
	o.applyTop(&spec)
	if o.set("cancel") {
		c, err := ParseCancel(o.Cancel)
		if err != nil {
			return spec, fmt.Errorf("--cancel: %w", err)
		}
		spec.Cancel = c
	}
	if err := o.applyArrival(&spec.Arrival); err != nil {
		return spec, err
	}
	if err := o.applyClassSet(&spec); err != nil {
		return spec, err
	}
	d, err := o.dists()
	if err != nil {
		return spec, err
	}
	var models []ModelWeight // per-request models (issue 38)
	if o.set("models") {
		if models, err = ParseModels("--models", o.Models); err != nil {
			return spec, err
		}
	}
	for i := range spec.Classes {
		o.applyClass(&spec.Classes[i], d)
		if models != nil {
			spec.Classes[i].Models = models
		}
	}
	if err := o.checkNeeds(spec); err != nil {
		return spec, err
	}
	return spec, spec.Validate()
}

// set says whether flag was given.
func (o *SpecOptions) set(flag string) bool { return o.Given != nil && o.Given(flag) }

// base is the spec to start from: the spec file's, else the preset.
func (o *SpecOptions) base() (Spec, error) {
	if o.SpecFile == "" {
		return Preset(o.Preset)
	}
	if o.set("preset") {
		return Spec{}, fmt.Errorf("give --preset or --spec, not both")
	}
	if o.ReadSpec == nil {
		return Spec{}, fmt.Errorf("spec file %s: no reader for spec files (SpecOptions.ReadSpec is nil)", o.SpecFile)
	}
	return o.ReadSpec(o.SpecFile)
}

// applyTop replaces the spec's seed, rate, duration, request cap and block size.
func (o *SpecOptions) applyTop(spec *Spec) {
	if o.set("seed") {
		spec.Seed = o.Seed
	}
	if o.set("rate") {
		spec.Arrival.Rate = o.Rate
	}
	if o.set("duration") {
		spec.SetDuration(o.Duration)
	}
	if o.set("max-requests") {
		spec.MaxRequests = o.MaxRequests
	}
	if o.set("block-tokens") {
		spec.BlockTokens = o.BlockTokens
	}
}

// arrivalFlags are the arrival flags that shape only some processes, and those processes.
var arrivalFlags = []struct {
	flag  string
	procs []string
}{{"cv", []string{Gamma, OnOff, Ramp, Diurnal}},
	{"rate-end", []string{Ramp}}, {"on", []string{OnOff}}, {"off", []string{OnOff}},
	{"period", []string{Diurnal}}, {"amplitude", []string{Diurnal}}}

// applyArrival replaces the arrival process and its shape; a shape flag given for a process
// it does not apply to is an error.
func (o *SpecOptions) applyArrival(a *ArrivalSpec) error {
	if o.set("arrival") {
		a.Process = o.Arrival
	}
	if o.set("cv") {
		a.CV = o.CV
	}
	if o.set("rate-end") {
		a.RateEnd = o.RateEnd
	}
	if o.set("on") {
		a.OnS = o.On.Seconds()
	}
	if o.set("off") {
		a.OffS = o.Off.Seconds()
	}
	if o.set("period") {
		a.PeriodS = o.Period.Seconds()
	}
	if o.set("amplitude") {
		a.Amplitude = o.Amplitude
	}
	for _, f := range arrivalFlags {
		if o.set(f.flag) && !slices.Contains(f.procs, a.Process) {
			return fmt.Errorf("--%s applies to --arrival %s, not %s", f.flag, strings.Join(f.procs, "|"), a.Process)
		}
	}
	return nil
}

// applyClassSet reweights the classes and renames the only one.
func (o *SpecOptions) applyClassSet(spec *Spec) error {
	if o.set("weights") {
		var err error
		if spec.Classes, err = reweight(spec.Classes, o.Weights); err != nil {
			return err
		}
	}
	if o.set("class") {
		if len(spec.Classes) != 1 {
			return fmt.Errorf("--class renames a single class; this spec has %d (use --weights to pick)", len(spec.Classes))
		}
		spec.Classes[0].Name = o.Class
	}
	return nil
}

// reweight keeps the classes named in "a=2,b=1" with those weights.
func reweight(classes []ClassSpec, s string) ([]ClassSpec, error) {
	byName := map[string]ClassSpec{}
	var names []string
	for _, c := range classes {
		byName[c.Name] = c
		names = append(names, c.Name)
	}
	var out []ClassSpec
	for _, part := range strings.Split(s, ",") {
		name, w, ok := strings.Cut(strings.TrimSpace(part), "=")
		c, known := byName[name]
		if !ok || !known {
			return nil, fmt.Errorf("--weights: %q is not CLASS=WEIGHT for a class of this spec (%s)", part, strings.Join(names, ", "))
		}
		weight, err := strconv.ParseFloat(w, 64)
		if err != nil || weight < 0 {
			return nil, fmt.Errorf("--weights: weight %q of %s is not a number >= 0", w, name)
		}
		c.Weight = weight
		out = append(out, c)
	}
	return out, nil
}

// classDists are the distributions the options give every class.
type classDists struct{ in, out, turns, newIn, think Dist }

// dists parses the distributions given (NewInput and Think also when not given).
func (o *SpecOptions) dists() (classDists, error) {
	var d classDists
	for _, p := range []struct {
		flag, val string
		dst       *Dist
	}{{"input", o.Input, &d.in}, {"output", o.Output, &d.out}, {"session-turns", o.Turns, &d.turns},
		{"session-input", o.NewInput, &d.newIn}, {"think", o.Think, &d.think}} {
		if p.val == "" || (!o.set(p.flag) && p.flag != "session-input" && p.flag != "think") {
			continue
		}
		v, err := ParseDist(p.val)
		if err != nil {
			return d, fmt.Errorf("--%s: %w", p.flag, err)
		}
		*p.dst = v
	}
	return d, nil
}

// applyClass replaces the lengths, shared prefixes and sessions of one class.
func (o *SpecOptions) applyClass(c *ClassSpec, d classDists) {
	if o.set("input") {
		c.Input = d.in
	}
	if o.set("output") {
		c.Output = d.out
	}
	if o.set("correlation") {
		c.Correlation = o.Correlation
	}
	o.applyPrefix(c)
	o.applySession(c, d)
}

// applyPrefix gives the class new shared-prefix groups (or none), or changes its own.
func (o *SpecOptions) applyPrefix(c *ClassSpec) {
	if o.set("prefix-groups") {
		if o.PrefixGroups == 0 {
			c.Prefix = nil
		} else {
			c.Prefix = &PrefixSpec{Groups: o.PrefixGroups, Tokens: o.PrefixTokens, Zipf: o.PrefixZipf, Fraction: o.PrefixFraction}
		}
		return
	}
	if c.Prefix == nil {
		return
	}
	if o.set("prefix-tokens") {
		c.Prefix.Tokens = o.PrefixTokens
	}
	if o.set("prefix-zipf") {
		c.Prefix.Zipf = o.PrefixZipf
	}
	if o.set("prefix-fraction") {
		c.Prefix.Fraction = o.PrefixFraction
	}
}

// applySession makes the class multi-turn, or changes its own sessions.
func (o *SpecOptions) applySession(c *ClassSpec, d classDists) {
	if o.set("session-turns") {
		c.Session = &SessionSpec{Turns: d.turns, NewInput: d.newIn, ThinkMS: d.think, TPOTMS: o.TPOTMS, MaxInput: o.MaxContext}
		return
	}
	if c.Session == nil {
		return
	}
	if o.set("session-input") {
		c.Session.NewInput = d.newIn
	}
	if o.set("think") {
		c.Session.ThinkMS = d.think
	}
	if o.set("tpot-ms") {
		c.Session.TPOTMS = o.TPOTMS
	}
	if o.set("max-context") {
		c.Session.MaxInput = o.MaxContext
	}
}

// checkNeeds refuses prefix flags when no class has shared prefixes and session flags when
// none has sessions.
func (o *SpecOptions) checkNeeds(spec Spec) error {
	var anyPrefix, anySession bool
	for _, c := range spec.Classes {
		anyPrefix = anyPrefix || c.Prefix != nil
		anySession = anySession || c.Session != nil
	}
	for _, f := range []string{"prefix-tokens", "prefix-zipf", "prefix-fraction"} {
		if o.set(f) && !anyPrefix {
			return fmt.Errorf("--%s needs shared prefixes: add --prefix-groups N", f)
		}
	}
	for _, f := range []string{"session-input", "think", "tpot-ms", "max-context"} {
		if o.set(f) && !anySession {
			return fmt.Errorf("--%s needs sessions: add --session-turns DIST", f)
		}
	}
	return nil
}
