package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/runner"
)

// newTraceFetchCmd is `llmbench trace fetch`: the init container of a sharded Kubernetes run
// whose trace is too large for a ConfigMap (k8s job --trace-url) downloads it with this.
func newTraceFetchCmd(app *App) *cobra.Command {
	var out, sum string
	var timeout time.Duration
	var maxBytes int64
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
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			n, err := runner.FetchTrace(ctx, args[0], sum, out, runner.FetchOptions{MaxBytes: maxBytes})
			if err != nil {
				return err
			}
			fmt.Fprintf(app.Stderr, "trace: %d bytes to %s, sha256 checked\n", n, out)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&out, "out", "o", "", "file to write (required)")
	fs.StringVar(&sum, "sha256", "", "the trace's SHA-256, hex (required)")
	fs.DurationVar(&timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.Int64Var(&maxBytes, "max-bytes", 16<<30, "refuse a larger body")
	_ = cmd.MarkFlagRequired("out")
	_ = cmd.MarkFlagRequired("sha256")
	return cmd
}
