package engineadapter

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
)

func targetFor(url, model string) (loadgen.Target, error) {
	return loadgen.Target{URL: url, Model: model, Stream: true}, nil
}

func TestOpenTargetEndpoint(t *testing.T) {
	engine := func() (refengine.Config, error) {
		t.Fatal("engine configured for an endpoint")
		return refengine.Config{}, nil
	}
	o := TargetOptions{Endpoint: "http://127.0.0.1:1", TimeScale: 1, Engine: engine, Model: "m", Target: targetFor,
		Info: metrics.RunInfo{Endpoint: "http://127.0.0.1:1", Mode: "open-loop"}}
	tgt, info, closeFn, err := OpenTarget(o)
	if err != nil {
		t.Fatal(err)
	}
	closeFn()
	if tgt.URL != o.Endpoint || info.Model != "m" || info.Endpoint != o.Info.Endpoint || info.Mode != "open-loop" || info.Engine != nil {
		t.Errorf("target %+v info %+v", tgt, info)
	}
	for _, c := range []struct {
		edit func(*TargetOptions)
		want string
	}{
		{func(o *TargetOptions) { o.TimeScale = 4 }, "--time-scale applies to the embedded reference engine only"},
		{func(o *TargetOptions) { o.EngineFlags = "--gpu, --tp" }, "reference-engine flags (--gpu, --tp) apply only without --endpoint"},
	} {
		bad := o
		c.edit(&bad)
		if _, _, _, err := OpenTarget(bad); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

func TestOpenTargetEmbedded(t *testing.T) {
	o := TargetOptions{TimeScale: 4, Target: targetFor,
		Engine: func() (refengine.Config, error) { return refengine.Config{Seed: 1}, nil }}
	tgt, info, closeFn, err := OpenTarget(o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tgt.URL, "http://127.0.0.1:") || tgt.Model == "" || !strings.Contains(info.Endpoint, tgt.URL) || info.Engine["time_scale"] != "4" {
		t.Errorf("target %+v info %+v", tgt, info)
	}
	resp, err := http.Get(tgt.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/health: %s", resp.Status)
	}
	closeFn()
	if _, err := http.Get(tgt.URL + "/health"); err == nil {
		t.Error("the engine still answers after close")
	}

	o.Engine = func() (refengine.Config, error) { return refengine.Config{}, errors.New("--faults: bad") }
	if _, _, _, err := OpenTarget(o); err == nil || err.Error() != "--faults: bad" {
		t.Errorf("engine config error %v", err)
	}
}

func TestServeStopsOnSignal(t *testing.T) {
	stop := make(chan os.Signal, 1)
	stop <- os.Interrupt
	var out, errs strings.Builder
	err := Serve(context.Background(), ServeOptions{Addr: "127.0.0.1:0", Engine: refengine.Config{Seed: 1}, Stdout: &out, Stderr: &errs, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "listening on http://127.0.0.1:") || !strings.Contains(errs.String(), "shutting down") {
		t.Errorf("stdout %q stderr %q", out.String(), errs.String())
	}
	if err := Serve(context.Background(), ServeOptions{Addr: "256.0.0.1:1", Stdout: &out, Stderr: &errs}); err == nil || !strings.Contains(err.Error(), "--addr 256.0.0.1:1") {
		t.Errorf("bad address: %v", err)
	}
}
