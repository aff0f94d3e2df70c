package main

import (
	"github.com/llmbench/llmbench/usecase"
)

// The flag groups' values copied into the use cases' option types (package usecase), which
// check them and turn them into the packages' options.

// env is the process environment as the use cases see it.
func (app *App) env() *usecase.Env {
	return &usecase.Env{
		Stdout: app.Stdout, Stderr: app.Stderr, Getenv: app.Getenv,
		IsTerminal: app.IsTerminal, TermWidth: app.TermWidth,
		Interrupts: app.Interrupts, Exit: app.Exit, Interrupted: &app.interrupted,
		Args: app.Args, Version: version, Config: flagConfig(app.flags),
		ShowProgress: app.showProgress(), Executable: app.Executable,
	}
}

// exitStatus turns a use case's exit status and error into RunE's error (nil for 0).
func exitStatus(code int, err error) error {
	if err == nil && code == usecase.ExitOK {
		return nil
	}
	return &exitError{code, err}
}

func (f *targetFlags) opts() usecase.TargetOptions {
	return usecase.TargetOptions{
		Endpoint: f.endpoint, API: f.api, BatchSize: f.batchSize, Backend: f.backend, NoStream: f.noStream,
		APIKeyEnv: f.apiKeyEnv, Headers: f.headers, CACert: f.caCert, Insecure: f.insecure,
		TConnect: f.tConnect, THeaders: f.tHeaders, TFirstToken: f.tFirstToken, TIdle: f.tIdle, TTotal: f.tTotal,
		MaxLine: f.maxLine, Tokenizer: f.tokenizer, PromptSizing: f.promptSizing, ScrapeMetric: f.scrapeMetric,
		SourceAddrs: f.sourceAddrs, HTTP2: f.http2, SessionHeader: f.sessionHeader,
	}
}

func (f *loadFlags) opts() usecase.LoadOptions {
	return usecase.LoadOptions{
		Concurrency: f.concurrency, MaxConcurrency: f.maxConcurrency, RateScale: f.rateScale, TimeScale: f.timeScale,
		Duration: f.duration, MaxRequests: f.maxRequests, Warmup: f.warmup, Cooldown: f.cooldown,
		Repeat: f.repeat, Seed: f.seed, Grace: f.grace, BlockTokens: f.blockTokens,
	}
}

func (f *metricFlags) opts() usecase.MetricOptions {
	return usecase.MetricOptions{
		InputTol: f.inputTol, SLO: f.slo, ClassSLO: f.classSLO, Stall: f.stall,
		PriceIn: f.priceIn, PriceOut: f.priceOut, GPUHour: f.gpuHour, GPUs: f.gpus, Currency: f.currency,
		LagLimit: f.lagLimit, FluidTTFT: f.fluidTTFT, FluidTBT: f.fluidTBT, Changed: f.changed,
	}
}

func (f *outputFlags) opts() usecase.OutputOptions {
	return usecase.OutputOptions{Out: f.out, EChartsJS: f.echartsJS, NoProgress: f.noProgress}
}

// opts copies the trace flags; --rate-scale and --time-scale, where the command has them,
// shorten the replay its --max-span bounds.
func (f *traceFlags) opts() usecase.TraceOptions {
	return usecase.TraceOptions{Path: f.path, Lenient: f.lenient, MaxSpan: f.maxSpan, SHA256: f.sha256,
		RateScale: f.flagFloat("rate-scale"), TimeScale: f.flagFloat("time-scale")}
}

func (f *engineFlags) opts() usecase.EngineOptions {
	return usecase.EngineOptions{
		Model: f.model, GPU: f.gpu, TP: f.tp, WeightDtype: f.weightDtype, KVDtype: f.kvDtype,
		MaxNumSeqs: f.maxNumSeqs, MaxNumBatchedTokens: f.maxNumBatchedTokens, BlockSize: f.blockSize,
		GPUMemUtil: f.gpuMemUtil, NumBlocks: f.numBlocks, MaxModelLen: f.maxModelLen,
		PrefixCaching: f.prefixCaching, SpecK: f.specK, SpecAlpha: f.specAlpha, SpecDraftModel: f.specDraftModel,
		SpecMethod: f.specMethod, SpecTree: f.specTree, SpecRepetition: f.specRepetition, SpecDraftTP: f.specDraftTP,
		Faults: f.faults, Noise: f.noise, ServedModelName: f.servedModelName, Profiles: f.profiles,
		Seed: f.seed, ResolvedSeed: f.resolvedSeed, Now: f.now,
		Disaggregated: f.disaggregated, KVTransferGBps: f.kvTransferGBps, Wire: f.wire,
		Reasoning: f.reasoning, Quality: f.quality, Changed: f.fs.Changed,
		LoRAs: f.lora.adapters, MaxLoRAs: f.lora.maxLoRAs,
	}
}

func (f *qualityFlags) opts() usecase.QualityOptions {
	return usecase.QualityOptions{
		KeepOutput: f.keepOutput, JudgeEndpoint: f.judgeEndpoint, JudgeModel: f.judgeModel,
		JudgeRubric: f.judgeRubric, JudgeConc: f.judgeConc, JudgeAPIKeyEnv: f.judgeAPIKeyEnv,
		Changed: f.fs.Changed,
	}
}

func (f *failureFlags) opts() usecase.FailureOptions {
	return usecase.FailureOptions{MaxRate: f.maxRate}
}
