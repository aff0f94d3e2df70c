package runner

import (
	"path/filepath"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestComparisonPoolsServerSpeculative: a comparison side's acceptance is its runs' counter
// deltas summed (not their rates averaged), attached to the side's pooled summary; a side whose
// runs have no counters gets no block.
func TestComparisonPoolsServerSpeculative(t *testing.T) {
	write := func(sv *metrics.ServerSpeculative) string {
		dir := t.TempDir()
		s := &metrics.Summary{Schema: metrics.SummarySchema, Requests: metrics.Requests{Total: 1, Succeeded: 1}}
		if sv != nil {
			s.Speculative = &metrics.Speculative{Server: sv}
		}
		if err := WriteJSON(filepath.Join(dir, SummaryFile), s); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	b1 := write(&metrics.ServerSpeculative{Available: true, Source: "vllm", Drafts: 100, DraftTokens: 400, Accepted: 300})
	b2 := write(&metrics.ServerSpeculative{Available: true, Source: "vllm", Drafts: 300, DraftTokens: 1200, Accepted: 300})
	a1 := write(nil)
	c := &metrics.Comparison{Base: metrics.ComparisonSide{Summary: &metrics.Summary{}}, Cand: metrics.ComparisonSide{Summary: &metrics.Summary{}}}
	attachSpeculative(c, []string{a1}, []string{b1, b2})
	if c.Base.Summary.Speculative != nil {
		t.Errorf("base without counters: %+v", c.Base.Summary.Speculative)
	}
	sp := c.Cand.Summary.Speculative
	if sp == nil || sp.Server == nil || sp.Server.Drafts != 400 || sp.Server.Accepted != 600 || sp.Server.AcceptanceRate != 600.0/1600 || sp.Server.MeanAcceptedLength != 2.5 {
		t.Fatalf("pooled %+v", sp)
	}
}
