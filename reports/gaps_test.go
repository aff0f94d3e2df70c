package reports

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// A latency bucket without samples is a gap in the chart (ECharts' "-") and "n/a" in its
// table, never a 0 ms point; the quantile column of a CDF table has no float noise.
func TestLatencyOverTimeGapsAndQuantileLabels(t *testing.T) {
	ts := fixtureSeries(30)
	for _, s := range []metrics.Series{ts.TTFTP50, ts.TTFTP99, ts.ITLP50, ts.ITLP99} {
		s[20], s[21] = math.NaN(), math.NaN()
	}
	sec, ok := timeSection(ts, 1000)
	if !ok {
		t.Fatal("no time section")
	}
	ch := sec.Blocks[0].Charts[0]
	if ch.ID != "ts-latency" {
		t.Fatalf("first chart %s", ch.ID)
	}
	for _, sr := range ch.Series {
		b, _ := json.Marshal(sr.Data)
		for _, x := range []string{"20", "21"} {
			if !strings.Contains(string(b), "["+x+",\"-\"]") {
				t.Errorf("%s: bucket at %s s is not a gap: %s", sr.Name, x, b)
			}
			if strings.Contains(string(b), "["+x+",0]") {
				t.Errorf("%s: bucket at %s s drawn as 0", sr.Name, x)
			}
		}
	}
	var row20 []cell
	for _, r := range ch.Table.Rows {
		if r[0].Text == "20" {
			row20 = r
		}
	}
	if len(row20) != 5 {
		t.Fatalf("table row for t=20: %v", row20)
	}
	for _, c := range row20[1:] {
		if c.Text != na {
			t.Errorf("empty bucket shown as %q, want %q", c.Text, na)
		}
	}
	for q, want := range map[float64]string{0.14: "14%", 0.58: "58%", 0.999: "99.9%", 0.0228: "2.28%", 1: "100%", 0: "0%"} {
		if got := fmtQuantile(q); got != want {
			t.Errorf("fmtQuantile(%v) = %q, want %q", q, got, want)
		}
	}
}

// The "each side" table shows the numbers the deltas table shows for every compared metric,
// even where a side's Summary (HdrHistogram, 0.1% resolution) says slightly otherwise.
func TestEachSideAgreesWithDeltas(t *testing.T) {
	c := fixtureComparison("cand")
	if c.Base.Summary == nil || c.Cand.Summary == nil {
		t.Fatal("fixture has no side summaries")
	}
	c.Base.Summary.Latency.TTFT.P99 += 5 // the histogram's rounding, exaggerated so the test can see it
	c.Cand.Summary.Latency.TTFT.P99 -= 5
	var ttft metrics.MetricDelta
	for _, m := range c.Metrics {
		if m.Name == "ttft.p99" {
			ttft = m
		}
	}
	if ttft.Name == "" {
		t.Fatal("fixture compares no ttft.p99")
	}
	sec := sidesSection(c)
	found := false
	for _, r := range sec.Blocks[0].Table.Rows {
		if !strings.HasPrefix(r[0].Text, "TTFT p50 / p99") {
			continue
		}
		found = true
		if !strings.HasSuffix(r[1].Text, " / "+fmtUnit(ttft.Base, ttft.Unit)) || !strings.HasSuffix(r[2].Text, " / "+fmtUnit(ttft.Cand, ttft.Unit)) {
			t.Errorf("each side shows %q / %q, deltas %s / %s", r[1].Text, r[2].Text, fmtUnit(ttft.Base, ttft.Unit), fmtUnit(ttft.Cand, ttft.Unit))
		}
	}
	if !found {
		t.Error("no TTFT row in the each-side table")
	}
}
