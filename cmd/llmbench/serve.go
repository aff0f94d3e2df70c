package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/runner/engineadapter"
)

func init() { register("serve", newServeCmd) }

func newServeCmd(app *App) *cobra.Command {
	var (
		addr       string
		apiKey     string
		timeScale  float64
		maxConc    int
		rateLimit  float64
		maxBodyMiB float64
		maxConns   int
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the reference engine as an OpenAI-compatible server",
		Long: `serve runs the bundled reference engine: a simulated GPU serving engine (continuous batching,
PagedAttention, chunked prefill, prefix caching, speculative decoding) that streams tokens at the
times a real GPU would, from a roofline model of the chosen model and GPU. It serves
/v1/completions, /v1/chat/completions, /v1/responses (OpenAI Responses), /v1/messages
(Anthropic Messages), /v1/embeddings, /v1/models, /health, /metrics, /version and
/llmbench/time (the clock reference of sharded runs, see run --shard). Images in prompts
(data URLs, Anthropic base64 blocks) are priced by the model's vision rule.
It binds 127.0.0.1 unless --addr says otherwise.`,
		Example: `  llmbench serve --model llama-3.1-8b --gpu h100-sxm
  llmbench serve --addr 127.0.0.1:9000 --gpu h200 --weight-dtype fp8 --spec-k 4 --spec-alpha 0.8
  LLMBENCH_API_KEY=secret llmbench serve --faults reset-mid=0.05,status-503=0.05`,
		Args: cobra.NoArgs,
	}
	ef := addEngineFlags(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&addr, "addr", "127.0.0.1:8000", "address to listen on (host:port)")
	fs.StringVar(&apiKey, "api-key", "", "require Authorization: Bearer <key>, or x-api-key: <key> on /v1/messages (default: $LLMBENCH_API_KEY)")
	fs.Float64Var(&timeScale, "time-scale", 1, "run the engine this many times faster than simulated GPU time")
	fs.IntVar(&maxConc, "max-concurrent-requests", 0, "answer 429 beyond this many generation requests in flight (0: no cap)")
	fs.Float64Var(&rateLimit, "rate-limit", 0, "answer 429 beyond this many generation requests per second (0: no cap)")
	fs.Float64Var(&maxBodyMiB, "max-body-mib", 8, "largest request body accepted, MiB")
	fs.IntVar(&maxConns, "max-connections", 0, "keep at most this many client connections open; more wait to be accepted (0: no cap)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := ef.config()
		if err != nil {
			return err
		}
		if apiKey == "" && app.Getenv != nil {
			apiKey = app.Getenv("LLMBENCH_API_KEY")
		}
		if !(timeScale > 0) {
			return fmt.Errorf("--time-scale %g: must be > 0", timeScale)
		}
		if !(maxBodyMiB > 0) {
			return fmt.Errorf("--max-body-mib %g: must be > 0", maxBodyMiB)
		}
		cfg.APIKey = apiKey
		cfg.TimeScale = timeScale
		cfg.MaxConcurrentRequests = maxConc
		cfg.RateLimit = rateLimit
		cfg.MaxBodyBytes = int64(maxBodyMiB * (1 << 20))
		if maxConns < 0 {
			return fmt.Errorf("--max-connections %d: must be >= 0", maxConns)
		}
		return engineadapter.Serve(cmd.Context(), engineadapter.ServeOptions{
			Addr: addr, MaxConns: maxConns, Engine: cfg, Stdout: app.Stdout, Stderr: app.Stderr, Stop: app.Interrupts,
		})
	}
	return cmd
}
