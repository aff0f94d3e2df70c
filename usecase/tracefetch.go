package usecase

import (
	"context"
	"fmt"
	"time"

	"github.com/llmbench/llmbench/runner"
)

// TraceFetchOptions are `llmbench trace fetch`'s options.
type TraceFetchOptions struct {
	URL, SHA256, Out string
	Timeout          time.Duration
	MaxBytes         int64
}

// TraceFetch downloads a trace, keeping it only if its SHA-256 matches (runner.FetchTrace).
func TraceFetch(ctx context.Context, env *Env, o *TraceFetchOptions) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	n, err := runner.FetchTrace(ctx, o.URL, o.SHA256, o.Out, runner.FetchOptions{MaxBytes: o.MaxBytes})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "trace: %d bytes to %s, sha256 checked\n", n, o.Out)
	return nil
}
