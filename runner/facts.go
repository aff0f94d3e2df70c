package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
)

// RunFactsFile is written into a results directory when a run starts: what summary.json's
// run block will say, the metric options and the workload, so that a run killed before it
// wrote summary.json can be rebuilt from requests.msgpack alone (Rebuild, `llmbench report`).
const RunFactsFile = "run.json"

// RunFactsSchema is the value of RunFacts.Schema.
const RunFactsSchema = "llmbench.run/v1"

// RunFacts is the content of run.json.
type RunFacts struct {
	Schema   string          `json:"schema"`
	Run      metrics.RunInfo `json:"run"`
	Metrics  metrics.Options `json:"metrics"`
	Workload any             `json:"workload,omitempty"`
}

func writeRunFacts(dir string, f RunFacts) error {
	f.Schema = RunFactsSchema
	return WriteJSON(filepath.Join(dir, RunFactsFile), f)
}

// ReadRunFacts loads DIR/run.json.
func ReadRunFacts(dir string) (*RunFacts, error) {
	data, err := os.ReadFile(filepath.Join(dir, RunFactsFile))
	if err != nil {
		return nil, err
	}
	var f RunFacts
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %w", filepath.Join(dir, RunFactsFile), err)
	}
	if f.Schema != RunFactsSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q", filepath.Join(dir, RunFactsFile), f.Schema, RunFactsSchema)
	}
	return &f, nil
}

// killedWarning heads the summary of a run rebuilt after it was killed.
const killedWarning = "rebuilt from requests.msgpack: the run ended without writing its summary (killed, or interrupted twice); requests that had not finished have no record, and the duration is the span of the records"

// Rebuild writes DIR/summary.json and DIR/report.html of a run that ended without them, from
// DIR/run.json and the records in DIR/requests.msgpack (a truncated last record is ignored).
func Rebuild(dir string, hopts reports.HTMLOptions) (*metrics.Summary, error) {
	f, err := ReadRunFacts(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no %s and no %s: not a llmbench results directory, or written by a version that did not record its run facts at start", dir, SummaryFile, RunFactsFile)
		}
		return nil, err
	}
	recPath := filepath.Join(dir, RecordsFile)
	if _, err := os.Stat(recPath); err != nil {
		return nil, fmt.Errorf("%s: no %s to rebuild from: %w", dir, RecordsFile, err)
	}
	sum, err := metrics.Summarize(metrics.FileSource(recPath), f.Metrics)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	info := f.Run
	info.Interrupted = true
	var first, last int64
	has := false
	_ = metrics.FileSource(recPath).Each(func(r *metrics.Record) error {
		end := max(r.End, r.Intended)
		if !has || r.Intended < first {
			first = r.Intended
		}
		if !has || end > last {
			last = end
		}
		has = true
		return nil
	})
	if has {
		info.DurationS = time.Duration(last - first).Seconds()
	}
	sum.Run = info
	sum.Workload = f.Workload
	sum.Warnings = append([]string{killedWarning}, sum.Warnings...)
	if err := WriteJSON(filepath.Join(dir, SummaryFile), sum); err != nil {
		return nil, err
	}
	return sum, RenderReport(dir, sum, hopts)
}
