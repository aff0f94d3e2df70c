package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/traces"
)

// Producer turns a trace's requests into Records: loadgen over HTTP, or the simulate adapter
// over the reference engine's virtual clock. sink is safe for concurrent use and must be called
// exactly once per request (failed ones included).
type Producer func(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*Produced, error)

// Produced is what a Producer reports about itself.
type Produced struct {
	Start time.Time
	Model string
	// Sizing says how synthesized prompts were sized on the target (loadgen.Sizer.String;
	// "" when the run's tokenizer fitted them), copied into RunInfo.PromptSizing.
	Sizing            string
	Interrupted       bool
	ClientCPUFraction float64
	// CPUStealFraction is the CPU steal during the run (loadgen.Result; 0: not measured).
	CPUStealFraction float64
	// Engine, when set, replaces RunInfo.Engine (configuration known only after the run).
	Engine map[string]string
	// Skipped counts trace requests deliberately left out of the run (--duration,
	// --max-requests); they have no record.
	Skipped int
	// Duration, when set, is the run's duration (a simulation's makespan on its virtual
	// clock); otherwise the wall time from Start to the end of the run.
	Duration time.Duration
	// Cluster, when set, is the per-replica load of a simulated cluster, copied into the
	// summary (simulate --replicas).
	Cluster *metrics.Cluster
	// Err, when set, ended the run early for a reason other than an interruption (the trace
	// could not be read again): the results are still written, with a warning, and Execute
	// returns Err.
	Err error
	// LateStart is how long after its agreed start (--start-at) the run was ready to send.
	LateStart time.Duration
	// Warnings are the producer's own findings about the run (a simulated engine's
	// overload), added to the summary's warnings.
	Warnings []string

	// Energy (issue 39): a simulated engine's modelled energy over its makespan, reported as
	// the summary's energy when the run scraped none.
	Energy *metrics.ModelledEnergy
	// Saturation (issue 39): the first saturated verdict of the online watch
	// (saturation.go), copied into the summary; nil when the run was not watched or never
	// saturated.
	Saturation *metrics.SaturationVerdict
}

// Options configures one measured run written to one results directory.
type Options struct {
	// Trace is the trace to replay; when nil, Requests (held in memory) is.
	Trace    traces.Source
	Requests []traces.Request
	OutDir   string
	Metrics  metrics.Options
	// Info is copied into summary.json's "run" block; Model, Start, DurationS and Interrupted
	// are filled in from the run.
	Info metrics.RunInfo
	HTML reports.HTMLOptions
	// OnRecords, when set, is called with the open records writer before the run starts so
	// that the caller can flush it on a hard exit (second Ctrl-C).
	OnRecords func(*metrics.RecordWriter)
	// Now is the wall clock for the run's start time (time.Now when nil).
	Now func() time.Time
	// SummarizeLive makes the summary's first pass read the Records as produce hands them
	// over, beside the run, instead of reading them back from the records file afterwards (the
	// summary is the same). For a producer that never changes a Record once handed over and
	// reports no ClientCPUFraction (which Summarize needs from the start): simulate. With
	// another producer, or when the run reports one, the summary is made from the file.
	SummarizeLive bool
	// BlockTokens is the prompt tokens per hash_ids block of the trace's designed prefix-cache
	// reuse (designed.go; 0: traces.DefaultBlockTokens): RunHTTP passes its prompts' block size.
	BlockTokens int
	// primed, when set, is the prefix priming done before the run (prime.go): its requests
	// count in the designed reuse, and the summary gets its block and hit-rate check.
	primed *primed
	// workers, when set, have polled the /metrics of the workers behind the endpoint
	// (scrape_workers.go); Execute stops them.
	workers []*scraper
	// scraper, when set, has polled the server's /metrics during the run; its samples are
	// saved to server-metrics.json and charted in the report. Execute stops it.
	scraper *scraper

	// power (issue 39; scrape_energy.go): the --power-metrics exporters' pollers, saved to
	// power-metrics.json, and the energy price. Execute stops them.
	power       []*scraper
	pricePerKWh float64
}

// Result is a finished run.
type Result struct {
	Dir     string
	Summary *metrics.Summary
	Records int
}

// Execute runs produce over opts.Requests, streams every Record to DIR/requests.msgpack as it
// completes, then writes DIR/summary.json (atomically) and DIR/report.html. An interrupted
// run (ctx canceled) still writes complete results marked interrupted.
func Execute(ctx context.Context, opts Options, produce Producer) (*Result, error) {
	if opts.Trace == nil {
		opts.Trace = traces.FromSlice(opts.Requests)
	}
	if opts.Trace.Len() == 0 {
		return nil, errors.New("no requests to send (empty trace?)")
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	if opts.Info.Shard == nil {
		// A shard replays part of the trace against a cache the other shards fill too: its
		// designed reuse is the merged run's (merge.go), from the whole trace.
		opts.Metrics = withDesignedReuseAfter(opts.Metrics, opts.Trace, opts.primedRequests(), opts.BlockTokens)
	}
	rec, err := startRecording(&opts, now)
	if err != nil {
		return nil, err
	}
	started := now()
	prod, perr := produce(ctx, opts.Trace, rec.sink)
	perr = rec.close(opts, prod, perr)
	if perr != nil {
		rec.discardIfEmpty(opts)
		return &Result{Dir: opts.OutDir, Records: rec.rw.Count()}, perr
	}
	if prod == nil {
		prod = &Produced{Start: started}
	}
	sum, err := summarizeRun(&opts, rec, prod)
	if err != nil {
		return &Result{Dir: opts.OutDir, Records: rec.rw.Count()}, fmt.Errorf("summarize: %w", err)
	}
	sum.Run = runInfo(opts.Info, prod, started, now)
	sum.Workload = workloadOf(opts.Trace.Stats(), sum.Run)
	sum.Cluster = prod.Cluster
	sum.Saturation = prod.Saturation
	if opts.scraper != nil {
		sum.ServerPrefixCache = serverPrefixCache(opts.scraper.Data(), sum.Throughput.WindowStartS, sum.Throughput.WindowEndS)
		metrics.AttachServerSpeculative(sum, serverSpeculative(opts.scraper.Data(), sum.Throughput.WindowStartS, sum.Throughput.WindowEndS))
	}
	if len(opts.workers) > 0 {
		sum.ServerPrefixCache = workersPrefixCache(opts.workers, sum.Throughput.WindowStartS, sum.Throughput.WindowEndS)
	}
	addEnergy(&opts, sum)
	if sum.Energy == nil && prod.Energy != nil {
		sum.Energy = metrics.EnergyFromModel(*prod.Energy, sum)
	}
	sum.Warnings = producedWarnings(sum.Warnings, prod)
	if opts.primed != nil {
		opts.primed.finish(sum)
	}
	if err := finish(opts, sum, rec.path); err != nil {
		return &Result{Dir: opts.OutDir, Summary: sum, Records: rec.rw.Count()}, err
	}
	return &Result{Dir: opts.OutDir, Summary: sum, Records: rec.rw.Count()}, prod.Err
}

// lateStartWarning is the lateness past --start-at that is worth a warning: below it, the
// wait is within a normal dispatch lag.
const lateStartWarning = time.Millisecond

const interruptedWarning = "interrupted: the run was stopped before the trace finished; requests never sent are counted as dropped"

// finish writes summary.json and report.html.
func finish(opts Options, sum *metrics.Summary, recPath string) error {
	if err := WriteJSON(filepath.Join(opts.OutDir, SummaryFile), sum); err != nil {
		return err
	}
	return RenderReport(opts.OutDir, sum, opts.HTML)
}

// RenderReport writes DIR/report.html from sum and the records in DIR (for sampled timelines).
func RenderReport(dir string, sum *metrics.Summary, hopts reports.HTMLOptions) error {
	recPath := filepath.Join(dir, RecordsFile)
	var recErr error
	if hopts.Samples == nil {
		samples, reasons, err := reports.SampleRecords(metrics.FileSource(recPath).Each)
		if err == nil {
			hopts.Samples, hopts.SampleReasons = samples, reasons
		} else {
			recErr = err
		}
	}
	if hopts.ServerMetrics == nil {
		if sm, err := readServerSamples(filepath.Join(dir, ScrapeFile)); err == nil {
			hopts.ServerMetrics = toReportSeries(sm)
		}
	}
	var b strings.Builder
	if err := reports.WriteHTML(&b, sum, hopts); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	if err := WriteFileAtomic(filepath.Join(dir, ReportFile), []byte(b.String())); err != nil {
		return err
	}
	if recErr != nil {
		return fmt.Errorf("report written from %s without sampled token timelines: %w", SummaryFile, recErr)
	}
	return nil
}
