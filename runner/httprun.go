package runner

import (
	"context"
	"io"
	"sync/atomic"

	"github.com/llmbench/llmbench/internal/progress"
	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/traces"
)

// HTTPRun is one measured replay over HTTP, as `llmbench run` describes it.
type HTTPRun struct {
	Trace traces.Source
	Load  loadgen.Options
	// TimeScale is the embedded engine's speed-up (see HTTPProducer); 1 for an endpoint.
	TimeScale float64
	Metrics   metrics.Options
	Info      metrics.RunInfo
	// OutDir is the results directory ("" = DefaultOutDir).
	OutDir string
	HTML   reports.HTMLOptions
	// Scrape polls the target's Prometheus /metrics during the run.
	Scrape bool
	// Progress receives the progress display; nil shows none. Terminal says whether it is an
	// interactive terminal (a bar redrawn in place) or not (a line every few seconds).
	Progress io.Writer
	Terminal bool
	// Interrupts stop the run gracefully (first) or at once (second).
	Interrupts Interrupts
	// Shard, when set, makes the run one shard of a run split N ways (see ShardOptions).
	Shard *ShardOptions
}

// RunHTTP runs one measured replay with progress display, optional scraping and interrupt
// handling, and writes its results directory (see Execute).
func RunHTTP(ctx context.Context, s HTTPRun) (*Result, error) {
	if s.Shard != nil {
		if err := prepareShard(ctx, &s, *s.Shard); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prog := &loadgen.Progress{}
	s.Load.Progress = prog
	var rw atomic.Pointer[metrics.RecordWriter]
	stopSignals := s.Interrupts.Watch(cancel, func() {
		if w := rw.Load(); w != nil {
			_ = w.Flush()
		}
	}, s.Load.Grace)
	defer stopSignals()

	var scr *scraper
	if s.Scrape {
		scr = startScraper(ctx, scrapeOptions{URL: s.Load.Target.URL, APIKey: s.Load.Target.APIKey, Headers: s.Load.Target.Headers, TimeScale: s.TimeScale})
	}
	var pd *progress.Display
	if s.Progress != nil {
		total := s.Trace.Len() * max(1, s.Load.Repeat)
		if s.Load.MaxRequests > 0 && s.Load.MaxRequests < total {
			total = s.Load.MaxRequests
		}
		pd = progress.Start(s.Progress, s.Terminal, total, func() progress.Snapshot {
			return progress.Snapshot{Sent: prog.Sent.Load(), InFlight: prog.InFlight.Load(), Done: prog.Done.Load(), Failed: prog.Failed.Load(), OutputTokens: prog.OutputTokens.Load()}
		}, nil)
	}
	produce := HTTPProducer(s.Load, s.TimeScale)
	if scr != nil {
		inner := produce
		produce = func(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*Produced, error) {
			p, err := inner(ctx, trace, sink)
			scr.Stop()
			return p, err
		}
	}
	res, err := Execute(ctx, Options{
		Trace:     s.Trace,
		OutDir:    s.OutDir,
		Metrics:   s.Metrics,
		Info:      s.Info,
		HTML:      s.HTML,
		OnRecords: func(w *metrics.RecordWriter) { rw.Store(w) },
		scraper:   scr,
	}, produce)
	if pd != nil {
		pd.Stop()
	}
	return res, err
}
