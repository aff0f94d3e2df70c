package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/usecase"
)

// newTraceFetchCmd is `llmbench trace fetch`: the init container of a sharded Kubernetes run
// whose trace is too large for a ConfigMap (k8s job --trace-url) downloads it with this.
func newTraceFetchCmd(app *App) *cobra.Command {
	o := &usecase.TraceFetchOptions{}
	cmd := &cobra.Command{
		Use:   "fetch URL --sha256 HEX -o FILE",
		Short: "Download a trace over HTTP(S), keeping it only if its SHA-256 matches",
		Long: `Download a trace to -o and check its SHA-256 before the file appears: the body is written
beside it under a temporary name and renamed only when the digest matches, so a failed,
truncated or tampered download leaves nothing a run could read. The pods of
` + "`llmbench k8s job --trace-url`" + ` fetch their trace this way (docs/distributed.md).`,
		Example: "  llmbench trace fetch https://traces.example/prod.msgpack --sha256 $(sha256sum prod.msgpack | cut -d' ' -f1) -o /trace/prod.msgpack",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.URL = args[0]
			return usecase.TraceFetch(cmd.Context(), app.env(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.Out, "out", "o", "", "file to write (required)")
	fs.StringVar(&o.SHA256, "sha256", "", "the trace's SHA-256, hex (required)")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.Int64Var(&o.MaxBytes, "max-bytes", 16<<30, "refuse a larger body")
	_ = cmd.MarkFlagRequired("out")
	_ = cmd.MarkFlagRequired("sha256")
	return cmd
}
