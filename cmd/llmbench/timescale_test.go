package main

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// scaledITL replays reqs against a reference engine at the given time scale and returns the
// chunk gaps of every request in ms, mapped back to engine time.
func scaledITL(t *testing.T, reqs []traces.Request, scale float64) []float64 {
	t.Helper()
	eng, err := refengine.New(refengine.Config{Seed: 1, TimeScale: scale})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := httptest.NewServer(eng.Handler())
	defer srv.Close()
	lo := loadgen.Options{
		Target:    loadgen.Target{URL: srv.URL, Model: eng.ServedModelName(), Backend: "vllm", Stream: true},
		Tokenizer: tokenizer.Reference{}, Seed: 1, Grace: time.Second,
	}
	var mu sync.Mutex
	var gaps []float64
	sink := func(r *metrics.Record) {
		mu.Lock()
		defer mu.Unlock()
		for i := 1; i < len(r.Chunks); i++ {
			gaps = append(gaps, float64(r.Chunks[i].T-r.Chunks[i-1].T)/1e6)
		}
	}
	if _, err := runner.HTTPProducer(lo, scale)(context.Background(), traces.FromSlice(reqs), sink); err != nil {
		t.Fatal(err)
	}
	return gaps
}

// TestTimeScaleKeepsTheShape replays one trace at time scale 1 and 4: mapped back to engine
// time, the chunk-gap distributions agree (median within 5%, quartiles within 15%). Before the
// engine slept in the kernel near its deadlines, the runtime's millisecond timer resolution
// turned a steady 1.8 ms wall-time step at scale 4 into gaps alternating near 2.2 and 1.1 ms
// (8.9 / 4.6 ms of engine time): the median stayed close, the quartiles were ~30% off. At
// scale 4 a 0.2 ms wall-time jitter is 0.8 ms of engine time, 11% of a 7 ms gap: a CI run
// measured P75 7.02 ms at scale 1 and 7.74 ms at scale 4, so the quartiles' bound is 15%.
func TestTimeScaleKeepsTheShape(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a trace in real time: skipped in -short mode")
	}
	quietMachine(t)
	var reqs []traces.Request
	for i := 0; i < 4; i++ {
		reqs = append(reqs, traces.Request{ID: fmt.Sprint("r", i), Arrival: time.Duration(i) * 50 * time.Millisecond, InputTokens: 64, OutputTokens: 48})
	}
	q := func(v []float64, p float64) float64 {
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		return s[int(p*float64(len(s)-1))]
	}
	// Two tries: one stall of a shared machine in a 0.6 s replay moves a quartile (a CI run
	// measured P25 6.6 ms at scale 1 and 3.6 at scale 4, and the next ten runs agreed within
	// 5%); the regression this guards shows in every run.
	var misses []string
	for try := range 2 {
		g1 := scaledITL(t, reqs, 1)
		g4 := scaledITL(t, reqs, 4)
		if len(g1) != len(g4) || len(g1) < 150 {
			t.Fatalf("%d and %d gaps", len(g1), len(g4))
		}
		misses = misses[:0]
		for _, c := range []struct {
			p, tol float64
		}{{0.5, 0.05}, {0.25, 0.15}, {0.75, 0.15}} {
			a, b := q(g1, c.p), q(g4, c.p)
			if math.Abs(b-a) > c.tol*a {
				misses = append(misses, fmt.Sprintf("chunk gap P%g: %.3f ms at scale 1, %.3f ms at scale 4 (more than %g%% apart)", 100*c.p, a, b, 100*c.tol))
			}
		}
		if len(misses) == 0 {
			return
		}
		t.Logf("try %d: %s", try+1, strings.Join(misses, "; "))
	}
	t.Errorf("both tries missed: %s", strings.Join(misses, "; "))
}
