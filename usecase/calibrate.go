package usecase

import (
	"fmt"
	"os"

	"github.com/llmbench/llmbench/calibrate"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
)

// CalibrateOptions are `llmbench calibrate`'s options: measured runs to fit (Fit) and hold
// out (Validate), the deployment's engine options, the profile file to write.
type CalibrateOptions struct {
	Fit      []string
	Validate []string
	// Out is the profile file written (-o).
	Out         string
	ModelConfig string
	MaxEvals    int
	// Engine describes the deployment; a --max-num-seqs not given (Engine.Changed) is fitted.
	Engine EngineOptions
}

// Calibrate fits the engine to the runs, writes the fitted profile and prints the fit's table
// and how to use the profile.
func Calibrate(env *Env, o *CalibrateOptions) error {
	cfg, err := o.Engine.Config()
	if err != nil {
		return err
	}
	models, err := o.modelConfig(&cfg) // written with the GPU so that --profiles alone reproduces the fit
	if err != nil {
		return err
	}
	opts := calibrate.Options{Engine: cfg, Fit: o.Fit, Validate: o.Validate, MaxEvals: o.MaxEvals}
	o.Engine.CalibrateFitOptions(&opts)
	res, err := calibrate.Run(opts)
	if err != nil {
		return err
	}
	data, err := calibrate.FormatProfile(models, res)
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.Out, data, 0o644); err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	fmt.Fprint(env.Stdout, res.Table())
	if len(models) > 0 {
		fmt.Fprintf(env.Stdout, "profile: %s (use --model %s --gpu %s --profiles %s)\n", o.Out, models[0].Name, res.GPU.Name, o.Out)
	} else {
		fmt.Fprintf(env.Stdout, "profile: %s (use --gpu %s --profiles %s)\n", o.Out, res.GPU.Name, o.Out)
	}
	return nil
}

// modelConfig adds the model of --model-config (a Hugging Face config.json) to cfg's profiles
// and returns it (none without the flag).
func (o *CalibrateOptions) modelConfig(cfg *refengine.Config) ([]perf.Model, error) {
	if o.ModelConfig == "" {
		return nil, nil
	}
	data, err := os.ReadFile(o.ModelConfig)
	if err != nil {
		return nil, fmt.Errorf("--model-config: %w", err)
	}
	m, err := perf.ParseHFConfig(data, o.ModelConfig, cfg.Model)
	if err != nil {
		return nil, fmt.Errorf("--model-config: %w", err)
	}
	reg := perf.NewRegistry()
	if cfg.Profiles != nil {
		reg = cfg.Profiles.Clone()
	}
	if err := reg.Add([]perf.Model{m}, nil); err != nil {
		return nil, fmt.Errorf("--model-config: %w", err)
	}
	cfg.Profiles = reg
	return []perf.Model{m}, nil
}
