package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/quality"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/traces"
)

// RegradeResult is what Regrade did.
type RegradeResult struct {
	Summary *metrics.Summary
	// Graded counts the records graded; Changed those whose grade differs from the one
	// stored.
	Graded, Changed int
}

// Regrade grades a finished results directory again, offline, from the output kept in its
// records and the expect checks of trace (the trace it replayed, whose checks may have been
// edited since): it rewrites the grades in requests.msgpack, replaces the quality block of
// summary.json (every other number stays as it was; a judge block is kept) and renders
// report.html again. The trace must hold the run's request ids.
func Regrade(dir string, trace traces.Source, hopts reports.HTMLOptions) (*RegradeResult, error) {
	sum, err := ReadSummary(dir)
	if err != nil {
		return nil, err
	}
	if fp := sum.Run.TraceFingerprint; fp != nil {
		got, err := FingerprintTrace(trace)
		if err != nil {
			return nil, fmt.Errorf("fingerprint the trace: %w", err)
		}
		if got.IDs != fp.IDs || got.Requests != fp.Requests {
			return nil, fmt.Errorf("%s replayed another trace (%s; this one is %s): grade it with the trace it replayed", dir, fp.Short(), got.Short())
		}
	}
	grader, err := quality.NewGrader(trace)
	if err != nil {
		return nil, fmt.Errorf("the trace's expect checks: %w", err)
	}
	if grader == nil {
		return nil, errors.New("the trace has no expect checks: nothing to grade (see traces/FORMAT.md, \"Quality checks\")")
	}
	recPath := filepath.Join(dir, RecordsFile)
	tmp := recPath + ".regrade"
	rw, err := metrics.CreateRecordFile(tmp)
	if err != nil {
		return nil, err
	}
	res := &RegradeResult{}
	err = metrics.EachRecord(recPath, func(r *metrics.Record) error {
		old := r.Grade
		grader.Grade(r)
		if r.Grade != "" {
			res.Graded++
		}
		if r.Grade != old {
			res.Changed++
		}
		return rw.Write(r)
	})
	if cerr := rw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("%s: %w", recPath, err)
	}
	if err := os.Rename(tmp, recPath); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("replace %s: %w", recPath, err)
	}
	facts, err := ReadRunFacts(dir)
	var mopts metrics.Options
	if err == nil {
		mopts = facts.Metrics
	}
	mopts.ClientCPUFraction, mopts.ClientStealFraction = sum.Client.CPUFraction, sum.Client.CPUStealFraction
	fresh, err := metrics.Summarize(metrics.FileSource(recPath), mopts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	var judge *metrics.JudgeSummary
	if sum.Quality != nil {
		judge = sum.Quality.Judge
	}
	sum.Quality = fresh.Quality
	if sum.Quality != nil {
		sum.Quality.Judge = judge
	}
	if err := WriteJSON(filepath.Join(dir, SummaryFile), sum); err != nil {
		return nil, err
	}
	if err := RenderReport(dir, sum, hopts); err != nil {
		return nil, err
	}
	res.Summary = sum
	return res, nil
}
