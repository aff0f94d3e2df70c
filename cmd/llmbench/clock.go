package main

import (
	"github.com/llmbench/llmbench/usecase"
	"github.com/spf13/cobra"
)

func init() { register("clock", newClockCmd) }

func newClockCmd(app *App) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "clock",
		Short: "Serve the time endpoint that the shards of a run measure their clock offsets against",
		Long: `clock serves only GET /llmbench/time ({"unix_nano": N}, this machine's wall clock), the
reference that ` + "`llmbench run --shard`" + ` measures its clock offset against by round trips
(--clock-ref) when the server under test does not serve it (` + "`llmbench serve`" + ` does).
Run one per sharded run; ` + "`llmbench k8s job`" + ` deploys it.`,
		Example: `  llmbench clock --addr 0.0.0.0:9000`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usecase.ServeClock(cmd.Context(), app.env(), addr)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:9000", "address to listen on (host:port)")
	return cmd
}
