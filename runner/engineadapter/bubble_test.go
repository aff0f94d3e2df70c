package engineadapter

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/pipenet"
	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// bubbleEngine starts the engine of cfg behind an HTTP server on an in-memory listener. Call it
// inside a synctest bubble (cfg.Clock on the bubble's time) and defer stop, which closes the
// server and the engine.
func bubbleEngine(t *testing.T, cfg refengine.Config) (eng *refengine.Engine, ln *pipenet.Net, stop func()) {
	t.Helper()
	eng, err := refengine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln = pipenet.New()
	srv := &http.Server{Handler: eng.Handler()}
	served := make(chan struct{})
	go func() { srv.Serve(ln); close(served) }()
	return eng, ln, func() { srv.Close(); <-served; eng.Close() }
}

// bubbleOptions are the loadgen options of a replay against bubbleEngine's server: the engine's
// model, the bubble's clock, the reference tokenizer, seed 1.
func bubbleOptions(eng *refengine.Engine, ln *pipenet.Net, backend, api string, stream bool) loadgen.Options {
	return loadgen.Options{
		Target: loadgen.Target{URL: "http://engine", Model: eng.ServedModelName(), Backend: backend, API: api, Stream: stream},
		Seed:   1, Grace: time.Second, Clock: loadClock{}, Dial: ln.Dial, Tokenizer: tokenizer.Reference{},
	}
}

// replayInto runs reqs with lo and appends a copy of every record (chunks included) to *recs.
func replayInto(t *testing.T, reqs []traces.Request, lo loadgen.Options, recs *[]metrics.Record) {
	t.Helper()
	var mu sync.Mutex
	if _, err := loadgen.Run(context.Background(), reqs, lo, func(r *metrics.Record) {
		mu.Lock()
		defer mu.Unlock()
		cp := *r
		cp.Chunks = append([]metrics.Chunk(nil), r.Chunks...)
		*recs = append(*recs, cp)
	}); err != nil {
		t.Fatal(err)
	}
}
