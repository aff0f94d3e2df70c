package usecase

import (
	"context"
	"fmt"

	"github.com/llmbench/llmbench/runner/engineadapter"
)

// ServeOptions are `llmbench serve`'s options: the reference engine as an OpenAI-compatible
// server on Addr.
type ServeOptions struct {
	Addr string
	// APIKey is the key requests must carry ("" reads $LLMBENCH_API_KEY; none when unset).
	APIKey     string
	TimeScale  float64
	MaxConc    int
	RateLimit  float64
	MaxBodyMiB float64
	MaxConns   int
	Engine     EngineOptions
}

// Serve runs the reference engine's server until ctx ends or an interrupt comes.
func Serve(ctx context.Context, env *Env, o *ServeOptions) error {
	cfg, err := o.Engine.Config()
	if err != nil {
		return err
	}
	apiKey := o.APIKey
	if apiKey == "" && env.Getenv != nil {
		apiKey = env.Getenv("LLMBENCH_API_KEY")
	}
	if !(o.TimeScale > 0) {
		return fmt.Errorf("--time-scale %g: must be > 0", o.TimeScale)
	}
	if !(o.MaxBodyMiB > 0) {
		return fmt.Errorf("--max-body-mib %g: must be > 0", o.MaxBodyMiB)
	}
	cfg.APIKey = apiKey
	cfg.TimeScale = o.TimeScale
	cfg.MaxConcurrentRequests = o.MaxConc
	cfg.RateLimit = o.RateLimit
	cfg.MaxBodyBytes = int64(o.MaxBodyMiB * (1 << 20))
	if o.MaxConns < 0 {
		return fmt.Errorf("--max-connections %d: must be >= 0", o.MaxConns)
	}
	return engineadapter.Serve(ctx, engineadapter.ServeOptions{
		Addr: o.Addr, MaxConns: o.MaxConns, Engine: cfg, Stdout: env.Stdout, Stderr: env.Stderr, Stop: env.Interrupts,
	})
}
