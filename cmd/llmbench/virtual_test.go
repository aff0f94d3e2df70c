package main

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

// Virtual time for HTTP runs against the reference engine: inside a testing/synctest bubble
// the engine (on bubbleClock), the HTTP server, the client (on loadClock) and an in-memory
// network share one virtual clock, so a run's times are exact whatever the machine's load,
// and the harness's own timing error is zero: what it measures is the wire's shape.

// bubbleClock is a refengine.Clock on the bubble's time (real time outside a bubble).
type bubbleClock struct{ epoch time.Time }

func (c *bubbleClock) Now() time.Duration             { return time.Since(c.epoch) }
func (c *bubbleClock) Wall(d time.Duration) time.Time { return c.epoch.Add(d) }
func (c *bubbleClock) SleepUntil(ctx context.Context, t time.Duration) error {
	d := t - c.Now()
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loadClock is a loadgen.Clock on the bubble's time.
type loadClock struct{}

func (loadClock) Now() time.Time { return time.Now() }
func (loadClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runVirtualCell replays reqs against an engine with the cell's personality on virtual time.
// It must run inside a synctest bubble; it returns the records, the engine's timelines by
// request id and the faults it injected.
func runVirtualCell(t *testing.T, c wireCell, reqs []traces.Request, extra func(*refengine.Config)) ([]metrics.Record, map[string]refengine.Timeline, map[string]int64) {
	t.Helper()
	cfg := refengine.Config{Seed: 7, Wire: c.wire, Clock: &bubbleClock{epoch: time.Now()}}
	if c.spec {
		cfg.SpecK, cfg.SpecAlpha = 4, 0.8
	}
	if extra != nil {
		extra(&cfg)
	}
	eng, err := refengine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ln := pipenet.New()
	srv := &http.Server{Handler: c.usage.wrap(eng.Handler())}
	served := make(chan struct{})
	go func() {
		srv.Serve(ln)
		close(served)
	}()
	defer func() {
		srv.Close()
		<-served
	}()
	api := "completions"
	if c.chat {
		api = "chat"
	}
	lo := loadgen.Options{
		Target: loadgen.Target{URL: "http://engine", Model: eng.ServedModelName(), Backend: "vllm", API: api, Stream: true},
		Seed:   1, Grace: time.Second, Clock: loadClock{}, Dial: ln.Dial,
	}
	if c.tok {
		lo.Tokenizer = tokenizer.Reference{}
	}
	var mu sync.Mutex
	var recs []metrics.Record
	sink := func(r *metrics.Record) {
		mu.Lock()
		defer mu.Unlock()
		cp := *r
		cp.Chunks = append([]metrics.Chunk(nil), r.Chunks...)
		recs = append(recs, cp)
	}
	if _, err := loadgen.Run(context.Background(), reqs, lo, sink); err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(reqs) {
		t.Fatalf("%d records for %d requests", len(recs), len(reqs))
	}
	tls := map[string]refengine.Timeline{}
	for _, r := range recs {
		tl, ok := eng.Timeline(r.ID)
		if !ok {
			t.Fatalf("no ground truth for %s", r.ID)
		}
		tls[r.ID] = tl
	}
	return recs, tls, eng.FaultsInjected()
}
