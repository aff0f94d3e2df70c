package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
)

// WriteRemoteSummary writes a summary.json brought back from elsewhere (llmbench k8s run
// reads it from the merge pod's log; the records stay on the cluster's volume) into dir,
// with its report.html drawn from the summary alone. It checks the schema first and
// writes nothing when the bytes are not a llmbench summary.
func WriteRemoteSummary(dir string, data []byte, hopts reports.HTMLOptions) (*metrics.Summary, error) {
	var s metrics.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("the merged summary is not valid JSON: %w", err)
	}
	if s.Schema != metrics.SummarySchema {
		return nil, fmt.Errorf("the merged summary has schema %q, want %q (another llmbench version in the image?)", s.Schema, metrics.SummarySchema)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, data, "", "  "); err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(filepath.Join(dir, SummaryFile), append(b.Bytes(), '\n')); err != nil {
		return nil, err
	}
	if hopts.Samples == nil {
		hopts.Samples = []metrics.Record{} // the records are on the cluster
	}
	return &s, RenderReport(dir, &s, hopts)
}
