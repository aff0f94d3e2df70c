package engineadapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
)

// ServeOptions is everything `llmbench serve` needs.
type ServeOptions struct {
	// Addr is the host:port to listen on.
	Addr string
	// MaxConns keeps at most this many client connections open (0 = no cap).
	MaxConns int
	Engine   refengine.Config
	// Stdout receives the banner (engine and address); Stderr the warnings and shutdown note.
	Stdout, Stderr io.Writer
	// Stop ends the server like ctx does (an interrupt); nil never fires.
	Stop <-chan os.Signal
}

// Serve serves the engine until ctx is done or Stop fires, then shuts down gracefully
// (in-flight streams get a few seconds).
func Serve(ctx context.Context, o ServeOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	eng, err := refengine.New(o.Engine)
	if err != nil {
		return err
	}
	defer eng.Close()
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", o.Addr, err)
	}
	ln = refengine.LimitListener(ln, o.MaxConns)
	srv := &http.Server{Handler: runner.WithClock(eng.Handler(), nil), ReadHeaderTimeout: 10 * time.Second, Protocols: h2c()}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	info := eng.Info()
	fmt.Fprintf(o.Stdout, "reference engine: %s on %d × %s (%s weights, %s KV, %d KV blocks, max model len %d)\n",
		info.Model, info.TP, info.GPU, info.WeightDtype, info.KVDtype, info.NumBlocks, info.MaxModelLen)
	fmt.Fprintf(o.Stdout, "listening on http://%s (model name %q)\n", ln.Addr(), info.ServedModelName)
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && o.Engine.APIKey == "" {
		fmt.Fprintf(o.Stderr, "warning: %s is reachable from other hosts and no --api-key (or LLMBENCH_API_KEY) is set\n", ln.Addr())
	}
	select {
	case <-ctx.Done():
	case <-o.Stop:
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(o.Stderr, "shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
