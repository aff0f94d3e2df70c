package usecase

import (
	"io"

	"github.com/llmbench/llmbench/internal/redact"
	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/runner/engineadapter"
)

// OpenTarget starts the embedded engine when no endpoint is given and returns the loadgen
// target and the run facts known before the run; the function it returns stops the engine.
// It warns on env.Stderr when the planned concurrency would run out of file descriptors.
// ef.ResolvedSeed holds the engine's seed afterwards.
func OpenTarget(env *Env, tf *TargetOptions, lf *LoadOptions, ef *EngineOptions) (loadgen.Target, metrics.RunInfo, func(), error) {
	info := metrics.RunInfo{Mode: lf.Mode(), Concurrency: lf.Concurrency, MaxConcurrency: lf.MaxConcurrency, RateScale: lf.RateScale, Repeat: lf.Repeat, Backend: tf.Backend, API: tf.API, BatchSize: tf.BatchSize}
	if tf.Endpoint != "" {
		info.Endpoint = redact.URL(tf.Endpoint)
	}
	warnFDHeadroom(env.Stderr, max(lf.Concurrency, lf.MaxConcurrency), tf.Endpoint == "", tf.HTTP2, runner.FDLimit())
	return engineadapter.OpenTarget(engineadapter.TargetOptions{
		Endpoint: tf.Endpoint, TimeScale: lf.TimeScale, EngineFlags: ef.ChangedNames(), Engine: ef.Config,
		Model: ef.ModelName(), Info: info,
		Target: func(url, model string) (loadgen.Target, error) { return tf.Target(env.Getenv, url, model) },
	})
}

// EffectiveTimeScale is the time scale of a run against endpoint: --time-scale on the
// embedded engine (endpoint ""), 1 against a server.
func (f *LoadOptions) EffectiveTimeScale(endpoint string) float64 {
	if endpoint != "" {
		return 1
	}
	return f.TimeScale
}

// Progress is where the progress display goes: stderr, or nowhere with --no-progress or
// --quiet.
func (f *OutputOptions) Progress(env *Env) io.Writer {
	if f.NoProgress || !env.ShowProgress {
		return nil
	}
	return env.Stderr
}
