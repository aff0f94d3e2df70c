package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/quality"
)

// recording is the records file of a run in progress (Execute): the writer the producer's sink
// streams to, the grader of the trace's expect checks, and the summary read beside the run
// (Options.SummarizeLive).
type recording struct {
	path     string // DIR/requests.msgpack
	created  bool   // Execute created the results directory
	rw       *metrics.RecordWriter
	writeErr atomic.Value // the first error writing a record
	live     *liveSummary // nil: the summary is made from the file afterwards
	sink     func(*metrics.Record)
}

// startRecording makes the results directory (opts.OutDir, defaulted from now), completes
// opts.Info with the facts known at the start (host, trace fingerprint, start time), writes
// them to DIR/run.json and opens the records file.
func startRecording(opts *Options, now func() time.Time) (*recording, error) {
	if opts.OutDir == "" {
		opts.OutDir = DefaultOutDir(now())
	}
	_, statErr := os.Stat(opts.OutDir)
	rec := &recording{created: os.IsNotExist(statErr), path: filepath.Join(opts.OutDir, RecordsFile)}
	if err := os.MkdirAll(opts.OutDir, dirPerm); err != nil {
		return nil, fmt.Errorf("create results directory: %w", err)
	}
	startFacts := opts.Info
	if startFacts.Host.OS == "" {
		startFacts.Host = HostFacts()
	}
	if startFacts.TraceFingerprint == nil {
		fp, ferr := FingerprintTrace(opts.Trace)
		if ferr != nil {
			return nil, fmt.Errorf("fingerprint the trace: %w", ferr)
		}
		startFacts.TraceFingerprint = fp
	}
	startFacts.Start = now().UTC().Format(time.RFC3339)
	opts.Info = startFacts
	grader, err := quality.NewGrader(opts.Trace)
	if err != nil {
		return nil, fmt.Errorf("the trace's expect checks: %w", err)
	}
	if err := writeRunFacts(opts.OutDir, RunFacts{Run: startFacts, Metrics: opts.Metrics, Workload: workloadOf(opts.Trace.Stats(), startFacts)}); err != nil {
		return nil, err
	}
	if rec.rw, err = metrics.CreateRecordFile(rec.path); err != nil {
		return nil, err
	}
	if opts.OnRecords != nil {
		opts.OnRecords(rec.rw)
	}
	rec.sink = func(r *metrics.Record) {
		if grader != nil {
			grader.Grade(r) // the request's timing is complete: grading is outside it
		}
		if err := rec.rw.Write(r); err != nil {
			rec.writeErr.CompareAndSwap(nil, err)
		}
	}
	if opts.SummarizeLive {
		rec.live = startLiveSummary(metrics.FileSource(rec.path), opts.Metrics)
		rec.sink = rec.live.sink(rec.sink)
	}
	return rec, nil
}

// close ends the recording once the producer returned (prod and perr, what it returned): it
// closes the records file, drops the live summary when it cannot serve, stops the scraper and
// saves its samples. It returns the run's error: perr, else the first failure writing the
// results.
func (rec *recording) close(opts Options, prod *Produced, perr error) error {
	if rec.live != nil {
		rec.live.produced()
	}
	if cerr := rec.rw.Close(); cerr != nil && perr == nil {
		perr = fmt.Errorf("records file: %w", cerr)
	}
	if rec.live != nil {
		rec.live.fileReady()
		if perr != nil || (prod != nil && prod.ClientCPUFraction != 0) {
			rec.live.result() // not used: wait for it to let go of the file
			rec.live = nil
		}
	}
	if werr, ok := rec.writeErr.Load().(error); ok && perr == nil {
		perr = fmt.Errorf("records file: %w", werr)
	}
	perr = stopWorkerScrapers(opts, prod, perr)
	if opts.scraper != nil {
		opts.scraper.Stop()
		if prod != nil && !prod.Start.IsZero() {
			opts.scraper.SetEpoch(prod.Start)
		}
		if err := WriteJSON(filepath.Join(opts.OutDir, ScrapeFile), opts.scraper.Data()); err != nil && perr == nil {
			perr = err
		}
	}
	if err := savePower(opts, prod); err != nil && perr == nil {
		perr = err
	}
	return perr
}

// discardIfEmpty removes the results of a run that measured nothing (it could not start), so
// that no empty results are left behind: the files, and the directory if Execute created it
// and it is empty.
func (rec *recording) discardIfEmpty(opts Options) {
	if rec.rw.Count() != 0 {
		return
	}
	os.Remove(rec.path)
	os.Remove(filepath.Join(opts.OutDir, ScrapeFile))
	os.Remove(filepath.Join(opts.OutDir, WorkersScrapeFile))
	os.Remove(filepath.Join(opts.OutDir, PowerFile))
	os.Remove(filepath.Join(opts.OutDir, RunFactsFile))
	if rec.created {
		os.Remove(opts.OutDir) // only if empty
	}
}
