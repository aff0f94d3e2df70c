package reports

import (
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestEnergyCompareInterval: a side with two or more runs shows its J/request and tokens per
// joule with the interval across its runs in the text line (terminal, Markdown) and in the
// HTML table; a side with one run shows the figure alone.
func TestEnergyCompareInterval(t *testing.T) {
	e := func(jpr, tpj float64) *metrics.Energy {
		w := 250.0
		return &metrics.Energy{Available: true, JoulesPerRequest: &jpr, OutputTokensPerJoule: &tpj, AvgPowerW: &w}
	}
	c := metrics.CompareEnergy([]*metrics.Energy{e(60, 2.4), e(62, 2.3), e(61, 2.35)}, []*metrics.Energy{e(48, 3)})
	lo, hi := fmtRate(c.Base.JoulesPerRequestCI.Lo), fmtRate(c.Base.JoulesPerRequestCI.Hi)
	want := "base 61.0 [" + lo + ", " + hi + "] J/request"
	if line := energyCompareLine(c); !strings.Contains(line, want) || !strings.Contains(line, "cand 48.0 J/request") {
		t.Errorf("line %q, want %q and the candidate without an interval", line, want)
	}
	sec := energyCompareSection(c)
	row := sec.Blocks[0].Table.Rows[0]
	if row[1].Text != "61.0 ["+lo+", "+hi+"]" || row[2].Text != "48.0" {
		t.Errorf("HTML J/request row %+v", row)
	}
	if !strings.Contains(sec.Intro, "Student-t interval") {
		t.Errorf("intro %q", sec.Intro)
	}
}
