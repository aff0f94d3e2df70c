package engineadapter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/llmbench/llmbench/refengine"
)

// Embedded is the reference engine served in-process on a loopback port, the default target
// when no --endpoint is given.
type Embedded struct {
	URL    string
	Engine *refengine.Engine
	srv    *http.Server
	done   chan error
}

// StartEmbedded starts an engine with cfg and serves it on 127.0.0.1 at a free port.
func StartEmbedded(cfg refengine.Config) (*Embedded, error) {
	eng, err := refengine.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("reference engine: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		eng.Close()
		return nil, fmt.Errorf("reference engine: listen on loopback: %w", err)
	}
	e := &Embedded{
		URL:    "http://" + ln.Addr().String(),
		Engine: eng,
		srv:    &http.Server{Handler: eng.Handler(), ReadHeaderTimeout: 10 * time.Second, Protocols: h2c()},
		done:   make(chan error, 1),
	}
	go func() { e.done <- e.srv.Serve(ln) }()
	return e, nil
}

// Close stops the server (in-flight streams are cut after a short grace) and the engine.
func (e *Embedded) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		e.srv.Close()
	}
	if err := <-e.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = err // the listener is ours; nothing useful to report after the run
	}
	e.Engine.Close()
}

// h2c is what the engine's servers speak: HTTP/1.1, and HTTP/2 with prior knowledge for
// clients that start with it (llmbench run --http2; issue 18).
func h2c() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return p
}
