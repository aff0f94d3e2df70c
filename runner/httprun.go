package runner

import (
	"context"
	"io"
	"sync/atomic"
	"time"

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
	// ProgressWidth bounds the display's lines (the terminal's width; 0: 100 columns).
	ProgressWidth int
	// Interrupts stop the run gracefully (first) or at once (second).
	Interrupts Interrupts
	// Shard, when set, makes the run one shard of a run split N ways (see ShardOptions).
	Shard *ShardOptions
	// Prime, when set, flushes the server's prefix cache and primes the trace's prefix groups
	// before the measured window, and checks the hit rate asked for (prime.go).
	Prime *PrefixPriming
	// Cold, when set, flushes the server's prefix cache and salts the prompts before anything
	// is sent (run --cold, --prompt-salt; cold.go).
	Cold *ColdStart
	// ScrapeWorkers are the base URLs of the workers behind the endpoint whose /metrics are
	// polled too; server_prefix_cache is then theirs, per worker and in all (scrape_workers.go).
	ScrapeWorkers []string

	// Power (issue 39): DCGM exporters to read GPU power from, and the energy price. With
	// Scrape and no exporter, the target's own /metrics is read for power.
	Power PowerOptions
	// ScrapeInterval is the polling period of Scrape and Power's exporters (0: 1 s).
	ScrapeInterval time.Duration

	// Saturation (issue 39), when set, watches the run for over-saturation while it runs
	// (saturation.go), shows the watch in the progress display and, with Stop, stops the run
	// at the first saturated verdict. For open-loop runs only.
	Saturation *SaturationOptions
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

	sizing := newSizingCache(s.Load.Sizer)
	coldWarns, pr, err := prepareCache(ctx, &s, sizing)
	if err != nil {
		return nil, err
	}
	var scr *scraper
	if s.Scrape {
		scr = startScraper(ctx, scrapeOptions{URL: s.Load.Target.URL, APIKey: s.Load.Target.APIKey, Headers: s.Load.Target.Headers, TimeScale: s.TimeScale, Interval: s.ScrapeInterval})
	}
	workers := startWorkerScrapers(ctx, s)
	power := startPowerScrapers(ctx, s.Power, s.TimeScale, s.ScrapeInterval)
	produce := coldProducer(sizing.producer(s.Load, s.TimeScale), coldWarns)
	var note func() string
	if s.Saturation != nil {
		sat := newSaturationWatch(*s.Saturation, prog, s.TimeScale)
		produce, note = sat.producer(produce), sat.note
	}
	var pd *progress.Display
	if s.Progress != nil {
		pd = startProgress(s, prog, scr, note)
	}
	if pd != nil {
		inner := produce
		produce = func(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*Produced, error) {
			return inner(ctx, trace, func(r *metrics.Record) {
				pd.Observe(liveRequest(r))
				sink(r)
			})
		}
	}
	if scr != nil || len(workers) > 0 || len(power) > 0 {
		inner := produce
		produce = func(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*Produced, error) {
			p, err := inner(ctx, trace, sink)
			if scr != nil {
				scr.Stop()
			}
			for _, w := range workers {
				w.Stop()
			}
			for _, ps := range power {
				ps.Stop()
			}
			return p, err
		}
	}
	res, err := Execute(ctx, Options{
		Trace:       s.Trace,
		OutDir:      s.OutDir,
		Metrics:     s.Metrics,
		Info:        s.Info,
		HTML:        s.HTML,
		OnRecords:   func(w *metrics.RecordWriter) { rw.Store(w) },
		BlockTokens: s.Load.PromptBlockTokens,
		primed:      pr,
		scraper:     scr,
		workers:     workers,
		power:       power,
		pricePerKWh: s.Power.PricePerKWh,
	}, produce)
	if pd != nil {
		pd.Stop()
	}
	return res, err
}

// startProgress starts the live display of s: the request total, the nominal length in wall
// time (the replay's length, or --duration, over the rate and time scales), the loadgen
// counters and, with scraping, the server's latest /metrics sample.
func startProgress(s HTTPRun, prog *loadgen.Progress, scr *scraper, note func() string) *progress.Display {
	total := s.Trace.Len() * max(1, s.Load.Repeat)
	if s.Load.MaxRequests > 0 && s.Load.MaxRequests < total {
		total = s.Load.MaxRequests
	}
	// The nominal length in wall time: --duration (given in engine time under --time-scale),
	// else an open-loop replay's length over the rate and time scales; a closed loop without
	// --duration has none.
	timeScale := max(s.TimeScale, 1)
	var expected time.Duration
	switch {
	case s.Load.Duration > 0:
		expected = time.Duration(float64(s.Load.Duration) / timeScale)
	case s.Load.Concurrency == 0:
		rate := s.Load.RateScale
		if rate <= 0 {
			rate = 1
		}
		first, last := s.Trace.Span()
		nominal := time.Duration(max(1, s.Load.Repeat)) * metrics.ReplayLength(first, last, s.Trace.Len())
		expected = time.Duration(float64(nominal) / (rate * timeScale))
	}
	o := progress.Options{W: s.Progress, Terminal: s.Terminal, Total: total, Expected: expected,
		LagLimit: s.Metrics.LagLimit, Width: s.ProgressWidth,
		Snap: func() progress.Snapshot {
			return progress.Snapshot{Sent: prog.Sent.Load(), InFlight: prog.InFlight.Load(), Done: prog.Done.Load(), Failed: prog.Failed.Load(), OutputTokens: prog.OutputTokens.Load()}
		}}
	if o.LagLimit <= 0 {
		o.LagLimit = metrics.DefaultLagLimit
	}
	o.Note = note
	if scr != nil {
		o.Server = func() (progress.Server, bool) {
			smp, ok := scr.Latest()
			return progress.Server{Running: smp.Running, Waiting: smp.Waiting, KVUsage: smp.KVUsage}, ok
		}
	}
	return progress.Start(o)
}

// liveRequest is what the live display needs of a finished Record (read before the sink
// recycles it).
func liveRequest(r *metrics.Record) progress.Request {
	q := progress.Request{Failure: string(r.Failure), TTFT: -1, Lag: -1, OutputTokens: r.OutputTokens}
	if r.Dispatched != 0 {
		q.Lag = time.Duration(r.Dispatched - r.Intended)
	}
	if r.OK() && r.FirstToken != 0 {
		q.TTFT = time.Duration(r.FirstToken - r.Intended)
	}
	if r.OK() && len(r.Chunks) > 0 {
		chunks := r.Chunks
		q.ITL = func(add func(time.Duration, int)) {
			for i, c := range chunks {
				n := int(max(c.Tokens, 1))
				if i == 0 {
					if n > 1 {
						add(0, n-1) // its k-1 zero gaps (its own gap is the TTFT)
					}
					continue
				}
				add(time.Duration(c.T-chunks[i-1].T), n)
			}
		}
	}
	return q
}
