package main

import (
	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/usecase"
)

func init() { register("serve", newServeCmd) }

func newServeCmd(app *App) *cobra.Command {
	o := &usecase.ServeOptions{}
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
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:8000", "address to listen on (host:port)")
	fs.StringVar(&o.APIKey, "api-key", "", "require Authorization: Bearer <key>, or x-api-key: <key> on /v1/messages (default: $LLMBENCH_API_KEY)")
	fs.Float64Var(&o.TimeScale, "time-scale", 1, "run the engine this many times faster than simulated GPU time")
	fs.IntVar(&o.MaxConc, "max-concurrent-requests", 0, "answer 429 beyond this many generation requests in flight (0: no cap)")
	fs.Float64Var(&o.RateLimit, "rate-limit", 0, "answer 429 beyond this many generation requests per second (0: no cap)")
	fs.Float64Var(&o.MaxBodyMiB, "max-body-mib", 8, "largest request body accepted, MiB")
	fs.IntVar(&o.MaxConns, "max-connections", 0, "keep at most this many client connections open; more wait to be accepted (0: no cap)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		o.Engine = ef.opts()
		return usecase.Serve(cmd.Context(), app.env(), o)
	}
	return cmd
}
