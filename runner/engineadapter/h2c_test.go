package engineadapter

import (
	"context"
	"fmt"
	"testing"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/traces"
)

// The engine's server accepts HTTP/2 with prior knowledge (run --http2): concurrent streams
// share one connection, where HTTP/1.1 needs several.
func TestEmbeddedEngineSpeaksH2C(t *testing.T) {
	e, err := StartEmbedded(refengine.Config{Seed: 1, TimeScale: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	reqs := make([]traces.Request, 8)
	for i := range reqs {
		reqs[i] = traces.Request{ID: fmt.Sprint(i), InputTokens: 16, OutputTokens: 8}
	}
	for _, h2 := range []bool{false, true} {
		tg := loadgen.Target{URL: e.URL, Model: e.Engine.Info().ServedModelName, Stream: true, HTTP2: h2}
		res, err := loadgen.Run(context.Background(), reqs, loadgen.Options{Target: tg}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Succeeded != len(reqs) {
			t.Fatalf("http2=%v: %d of %d succeeded", h2, res.Succeeded, len(reqs))
		}
		if h2 && res.Connections != 1 || !h2 && res.Connections < 2 {
			t.Errorf("http2=%v: %d connections for %d concurrent streams", h2, res.Connections, len(reqs))
		}
	}
}
