package engineadapter

import (
	"context"
	"fmt"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
)

// TargetOptions say what a run replays against: an endpoint, or (Endpoint "") the embedded
// reference engine.
type TargetOptions struct {
	// Endpoint is the server's base URL; "" starts the embedded reference engine.
	Endpoint string
	// TimeScale runs the embedded engine that many times faster than real time; with an
	// Endpoint anything but 1 is an error (the trace is scaled with the rate scale instead).
	TimeScale float64
	// EngineFlags names the engine-only settings given (for the error message: "--gpu,
	// --tp"); "" when none. With an Endpoint they are an error.
	EngineFlags string
	// Engine builds the embedded engine's configuration (TimeScale is set from the field
	// above); it is called only without an Endpoint.
	Engine func() (refengine.Config, error)
	// Model is the model name to request from an Endpoint ("" = discover it); the embedded
	// engine's served model name is used otherwise.
	Model string
	// Target builds the loadgen target for a base URL and model name (key, headers, timeouts).
	Target func(url, model string) (loadgen.Target, error)
	// Info holds the run facts known before the run; OpenTarget fills Endpoint (for the
	// embedded engine; an endpoint's redacted URL is the caller's to set), Model and Engine.
	Info metrics.RunInfo
}

// OpenTarget starts the embedded engine when no endpoint is given and returns the loadgen
// target, the run facts known before the run, and the function that stops the engine (a no-op
// for an endpoint).
func OpenTarget(o TargetOptions) (loadgen.Target, metrics.RunInfo, func(), error) {
	info := o.Info
	if o.Endpoint != "" {
		if o.TimeScale != 1 {
			return loadgen.Target{}, info, nil, fmt.Errorf("--time-scale applies to the embedded reference engine only; with --endpoint use --rate-scale")
		}
		if o.EngineFlags != "" {
			return loadgen.Target{}, info, nil, fmt.Errorf("reference-engine flags (%s) apply only without --endpoint", o.EngineFlags)
		}
		t, err := o.Target(o.Endpoint, o.Model)
		info.Model = t.Model
		if err == nil {
			// The server's own configuration (speculative settings, dtype, batch limits) goes
			// into the run facts, so that compare lists the differences between runs.
			info.Engine = runner.FetchServerConfig(context.Background(), o.Endpoint, t.APIKey, t.Model, t.Headers)
		}
		return t, info, func() {}, err
	}
	cfg, err := o.Engine()
	if err != nil {
		return loadgen.Target{}, info, nil, err
	}
	cfg.TimeScale = o.TimeScale
	eng, err := StartEmbedded(cfg)
	if err != nil {
		return loadgen.Target{}, info, nil, err
	}
	t, err := o.Target(eng.URL, eng.Engine.ServedModelName())
	if err != nil {
		eng.Close()
		return t, info, nil, err
	}
	info.Endpoint = "embedded reference engine (" + eng.URL + ")"
	info.Engine = eng.Engine.Describe()
	return t, info, eng.Close, nil
}
