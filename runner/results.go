package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
)

// File names inside a results directory (a stable contract; see docs/results.md).
const (
	SummaryFile  = "summary.json"
	RecordsFile  = "requests.msgpack"
	ReportFile   = "report.html"
	ScrapeFile   = "server-metrics.json"
	sweepFile    = "sweep.json"
	abFile       = "ab.json"
	compareFile  = "comparison.json"
	dirPerm      = 0o755
	filePerm     = 0o644
	timestampFmt = "20060102-150405"
)

// DefaultOutDir is results/<timestamp> for a run started at t.
func DefaultOutDir(t time.Time) string {
	return filepath.Join("results", t.UTC().Format(timestampFmt))
}

// WriteFileAtomic writes data to path through a temporary file in the same directory and a
// rename, so a reader never sees a half-written file.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(name, filePerm); err != nil {
		os.Remove(name)
		return err
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteJSON writes v as indented JSON atomically.
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return WriteFileAtomic(path, append(data, '\n'))
}

// ReadSummary loads DIR/summary.json (or a summary.json path) and checks its schema.
func ReadSummary(path string) (*metrics.Summary, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, SummaryFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read summary: %w (is this a llmbench results directory?)", err)
	}
	var s metrics.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %w", path, err)
	}
	if s.Schema != metrics.SummarySchema {
		return nil, fmt.Errorf("%s: schema %q, want %q", path, s.Schema, metrics.SummarySchema)
	}
	return &s, nil
}

// Resummarize recomputes a results directory's summary from its records with new metric
// options, keeps the run facts and workload of old, and rewrites summary.json.
func Resummarize(dir string, old *metrics.Summary, opts metrics.Options) (*metrics.Summary, error) {
	opts.ClientCPUFraction, opts.ClientStealFraction = old.Client.CPUFraction, old.Client.CPUStealFraction
	sum, err := metrics.Summarize(metrics.FileSource(filepath.Join(dir, RecordsFile)), opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	sum.Run = old.Run
	sum.Workload = old.Workload
	sum.Cluster = old.Cluster
	keepDesigned(sum, old)
	reEnergy(dir, sum, old) // issue 39: scrape_energy.go
	if old.Run.Interrupted {
		sum.Warnings = append([]string{interruptedWarning}, sum.Warnings...)
	}
	if v := old.Saturation; v != nil {
		// Issue 39: judged while the run went; the records alone cannot judge it again.
		sum.Saturation = v
		sum.Warnings = append(sum.Warnings, saturationWarning(*v))
	}
	if err := WriteJSON(filepath.Join(dir, SummaryFile), sum); err != nil {
		return nil, err
	}
	return sum, nil
}

// RecordSources opens the records of each results directory.
func RecordSources(dirs []string) ([]metrics.Source, error) {
	out := make([]metrics.Source, 0, len(dirs))
	for _, d := range dirs {
		p := filepath.Join(d, RecordsFile)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s: no %s (is it a llmbench results directory?)", d, RecordsFile)
		}
		out = append(out, metrics.FileSource(p))
	}
	return out, nil
}

// PairRecords matches the per-request latencies of two results directories for the report's
// A-vs-B scatter; nil (no scatter) when the records cannot be read.
func PairRecords(baseDir, candDir string) *reports.RequestPairs {
	p, err := reports.PairRecords(metrics.FileSource(filepath.Join(baseDir, RecordsFile)).Each,
		metrics.FileSource(filepath.Join(candDir, RecordsFile)).Each, 0)
	if err != nil {
		return nil
	}
	return p
}
