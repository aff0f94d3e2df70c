package runner

import (
	"fmt"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
)

// summarizeRun makes the run's summary from its records (read back from the file, or the live
// summary's), and picks the report's sampled token timelines into opts.HTML when the caller
// gave none.
func summarizeRun(opts *Options, rec *recording, prod *Produced) (*metrics.Summary, error) {
	mopts := opts.Metrics
	mopts.ClientCPUFraction = prod.ClientCPUFraction
	mopts.ClientStealFraction = prod.CPUStealFraction
	// The report's sampled token timelines are picked in a pass of their own over the records,
	// on another core while the summary makes its two (a million-request simulation: seconds).
	var samples []metrics.Record
	var reasons []string
	var sampleErr error
	sampled := make(chan struct{})
	if opts.HTML.Samples == nil {
		go func() {
			defer close(sampled)
			samples, reasons, sampleErr = reports.SampleRecords(metrics.FileSource(rec.path).Each)
		}()
	} else {
		close(sampled)
	}
	var sum *metrics.Summary
	var err error
	if rec.live != nil {
		sum, err = rec.live.result()
	} else {
		sum, err = metrics.Summarize(metrics.FileSource(rec.path), mopts)
	}
	<-sampled
	if opts.HTML.Samples == nil && sampleErr == nil {
		opts.HTML.Samples, opts.HTML.SampleReasons = samples, reasons // else RenderReport says why there are none
	}
	return sum, err
}

// runInfo is the summary's "run" block: the facts known at the start (info) completed with
// what the producer reported (model, prompt sizing, engine, start, duration, interruption).
// started is the wall time produce was called at, the start when the producer reports none.
func runInfo(info metrics.RunInfo, prod *Produced, started time.Time, now func() time.Time) metrics.RunInfo {
	if prod.Model != "" {
		info.Model = prod.Model
	}
	if prod.Sizing != "" {
		info.PromptSizing = prod.Sizing
	}
	if prod.Engine != nil {
		info.Engine = prod.Engine
	}
	if !prod.Start.IsZero() {
		started = prod.Start
	}
	info.Start = started.UTC().Format(time.RFC3339)
	info.DurationS = now().Sub(started).Seconds()
	if prod.Duration > 0 {
		info.DurationS = prod.Duration.Seconds()
	}
	info.Interrupted = prod.Interrupted
	if info.Host.OS == "" {
		info.Host = HostFacts()
	}
	return info
}

// producedWarnings adds to the summary's warnings what the producer's report calls for: an
// interruption or an early end first, then a late start, the producer's own findings and the
// requests left outside the run.
func producedWarnings(warnings []string, prod *Produced) []string {
	if prod.Interrupted {
		warnings = append([]string{interruptedWarning}, warnings...)
	}
	if prod.Err != nil {
		warnings = append([]string{"the run ended early: " + prod.Err.Error() + "; requests after that point were not sent and have no record"}, warnings...)
	}
	if prod.LateStart >= lateStartWarning {
		warnings = append(warnings, fmt.Sprintf("the client was ready %s after the run's start time (--start-at): the requests due before then were sent late, and their schedule lag and TTFT include the wait; give a later --start-at", prod.LateStart.Round(time.Millisecond)))
	}
	warnings = append(warnings, prod.Warnings...)
	if prod.Skipped > 0 && prod.Saturation != nil && prod.Saturation.Stopped {
		warnings = append(warnings, fmt.Sprintf("%d of the trace's requests were not sent: the run stopped at saturation", prod.Skipped))
	} else if prod.Skipped > 0 {
		warnings = append(warnings, fmt.Sprintf("%d of the trace's requests were outside the run (--duration or --max-requests) and were not sent", prod.Skipped))
	}
	return warnings
}
