package reports

import (
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestRegistryKnownToReports: every entry of the metric registry is known to the reports —
// its unit has a format, a family the summary's Latency holds has a percentile-table row with
// the registry's label and description, an overlaid family has a chart title, and every
// verdict has a colour and a class.
func TestRegistryKnownToReports(t *testing.T) {
	for _, m := range metrics.Metrics() {
		if _, ok := unitFormats[m.Unit]; !ok {
			t.Errorf("%s: unit %q has no format in unitFormats", m.Name, m.Unit)
		}
		if m.Title == "" || m.What == "" {
			t.Errorf("%s: registry entry lacks a title or a description", m.Name)
		}
	}
	rows := map[string]distRow{}
	for _, r := range latencyRows(metrics.Latency{}) {
		rows[r.Key] = r
	}
	for _, f := range metrics.Families() {
		if _, inLatency := metrics.LatencyDist(metrics.Latency{}, f.Name); inLatency {
			r, ok := rows[f.Name]
			if !ok || r.Label != f.Short || r.Note != f.What {
				t.Errorf("family %s: latency row %+v, want label %q note %q", f.Name, r, f.Short, f.What)
			}
		}
		if f.Overlay && cdfTitle(f.Name) != f.Title {
			t.Errorf("family %s: CDF title %q, want %q", f.Name, cdfTitle(f.Name), f.Title)
		}
	}
	for _, v := range []string{metrics.VerdictRegressed, metrics.VerdictWorse, metrics.VerdictBetter,
		metrics.VerdictChanged, metrics.VerdictUnchanged, metrics.VerdictNA} {
		if verdictColor[v] == "" || verdictClass[v] == "" {
			t.Errorf("verdict %s has no colour or class", v)
		}
	}
}
