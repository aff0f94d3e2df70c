package usecase

import (
	"context"
	"fmt"
	"maps"

	"github.com/llmbench/llmbench/internal/redact"
	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/runner/engineadapter"
)

// arm builds one arm of an A/B: an endpoint, or an embedded reference engine with the
// command's engine options plus overrides. The returned function closes it.
func (o *ABOptions) arm(ctx context.Context, env *Env, name, endpoint string, overrides []string, ind runner.Independence) (runner.Arm, func(), error) {
	tok, err := o.Target.LoadTokenizer(endpoint == "")
	if err != nil {
		return runner.Arm{}, nil, err
	}
	info := metrics.RunInfo{Command: CommandLine(env.Args), Trace: o.Trace.Path, Seed: o.Load.Seed, Version: env.Version,
		Mode: o.Load.Mode(), Concurrency: o.Load.Concurrency, MaxConcurrency: o.Load.MaxConcurrency,
		RateScale: o.Load.RateScale, Backend: o.Target.Backend, Tokenizer: tok.Name(), Config: env.config(),
		API: o.Target.API, BatchSize: o.Target.BatchSize}
	timeScale := 1.0
	url, closeArm, config, err := o.armServer(&info, endpoint, overrides)
	if err != nil {
		return runner.Arm{}, nil, err
	}
	if endpoint == "" {
		timeScale = o.Load.TimeScale
	}
	t, err := o.Target.Target(env.Getenv, url, o.Engine.ModelName())
	if err != nil {
		closeArm()
		return runner.Arm{}, nil, err
	}
	arm := runner.Arm{Name: name, Info: info}
	if endpoint != "" {
		if config, err = o.serverFacts(ctx, &arm, endpoint, t, ind); err != nil {
			return runner.Arm{}, nil, err
		}
	} else if ind.Flush {
		// The embedded reference engine flushes by SGLang's endpoint (refengine/flush.go).
		flush, err := runner.NewCacheFlush(ctx, url, "")
		if err != nil {
			closeArm()
			return runner.Arm{}, nil, fmt.Errorf("--independent-repeats %s: %w", o.Independence, err)
		}
		arm.Flush, arm.FlushMethod = flush.Flush, flush.Method
	}
	lo, err := o.Load.Options(t, tok)
	if err == nil {
		lo.PromptSizing, err = o.Target.Sizing(endpoint == "")
	}
	if err != nil {
		closeArm()
		return runner.Arm{}, nil, err
	}
	lo.KeepOutput = o.Quality.KeepOutput || o.Quality.JudgeEndpoint != ""
	config["model"] = t.Model
	config["backend"] = t.Backend
	arm.Produce, arm.Salted = runner.HTTPProducers(lo, timeScale)
	arm.Config = config
	if endpoint == "" {
		arm.Scrape = &runner.ArmScrape{URL: url, TimeScale: timeScale} // the engine's speculative counters (issue 38)
	}
	return arm, closeArm, nil
}

// armServer is an arm's server: the endpoint as given, or an embedded reference engine
// started with the arm's engine options (recorded in info and in the arm's configuration).
// It returns the server's URL, a function that stops it and the arm's configuration so far.
func (o *ABOptions) armServer(info *metrics.RunInfo, endpoint string, overrides []string) (string, func(), map[string]string, error) {
	config := map[string]string{}
	if endpoint != "" {
		if o.Load.TimeScale != 1 {
			return "", nil, nil, fmt.Errorf("--time-scale applies to reference-engine arms only")
		}
		info.Endpoint = redact.URL(endpoint)
		return endpoint, func() {}, config, nil
	}
	ef, err := o.armEngine(overrides)
	if err != nil {
		return "", nil, nil, err
	}
	cfg, err := ef.Config()
	if err != nil {
		return "", nil, nil, err
	}
	cfg.TimeScale = o.Load.TimeScale
	info.TimeScale = o.Load.TimeScale
	info.EngineSeed = cfg.Seed
	eng, err := engineadapter.StartEmbedded(cfg)
	if err != nil {
		return "", nil, nil, err
	}
	info.Endpoint = "embedded reference engine"
	info.Engine = eng.Engine.Describe()
	for k, v := range info.Engine {
		config["engine."+k] = v
	}
	delete(config, "engine.time_scale")
	return eng.URL, eng.Close, config, nil
}

// armEngine is an arm's engine options: ArmEngine's, or Engine when there is none.
func (o *ABOptions) armEngine(overrides []string) (EngineOptions, error) {
	if o.ArmEngine != nil {
		return o.ArmEngine(overrides)
	}
	if len(overrides) > 0 {
		return EngineOptions{}, fmt.Errorf("engine overrides %q: no parser for them (ABOptions.ArmEngine is nil)", overrides)
	}
	return o.Engine, nil
}

// serverFacts reads an endpoint arm's server configuration into the arm's run facts (so the
// comparison lists the servers' differences) and returns it; with a flush asked for, it finds
// how the server flushes its prefix cache.
func (o *ABOptions) serverFacts(ctx context.Context, arm *runner.Arm, endpoint string, t loadgen.Target, ind runner.Independence) (map[string]string, error) {
	config := runner.FetchServerConfig(ctx, endpoint, t.APIKey, t.Model, t.Headers)
	arm.Info.Engine = maps.Clone(config)
	if ind.Flush {
		flush, err := runner.NewCacheFlush(ctx, endpoint, t.APIKey)
		if err != nil {
			return nil, fmt.Errorf("--independent-repeats %s: %w", o.Independence, err)
		}
		arm.Flush, arm.FlushMethod = flush.Flush, flush.Method
	}
	return config, nil
}
