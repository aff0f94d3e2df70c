package reports

import (
	"bytes"
	"strings"
	"testing"
)

func sampleTrend() *Trend {
	t := &Trend{Title: "history <b>", Headline: "FAIL: 1 regression", Facts: [][2]string{{"store", "/x/h.db"}}, Generator: "llmbench test"}
	s := TrendSeries{Metric: "tpot.p95", Unit: "ms", Better: "lower", Config: `trace=w-1 branch=<script>alert(1)</script>`}
	for i := 0; i < 8; i++ {
		v, lv := 10.0, 10.0
		if i >= 5 {
			v, lv = 14, 14
		}
		link := "night-" + string(rune('1'+i)) + "/report.html"
		if i == 0 {
			link = "javascript:alert(1)"
		}
		s.Runs = append(s.Runs, TrendRun{ID: int64(i + 1), Start: "2026-11-0" + string(rune('1'+i)), Value: v, Link: link})
		s.Level = append(s.Level, lv)
	}
	s.Changes = []TrendChange{{Index: 5, Kind: "regression", Bad: true, Summary: "10 ms → 14 ms (+40.0%), p=0.005", Changed: "engine.num_speculative_tokens 4 → 0"}}
	t.Series = append(t.Series, s)
	return t
}

// TestTrendHTML: the change is marked in the chart and listed with what changed; every run is
// a table row linked to its results; outside text is escaped and a javascript: link is
// neutralized; identical input gives identical bytes.
func TestTrendHTML(t *testing.T) {
	var a, b bytes.Buffer
	o := HTMLOptions{Getenv: func(string) string { return "" }}
	if err := WriteTrendHTML(&a, sampleTrend(), o); err != nil {
		t.Fatal(err)
	}
	if err := WriteTrendHTML(&b, sampleTrend(), o); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two renderings of the same trend differ")
	}
	page := a.String()
	for _, want := range []string{
		`id="trend-0-0"`, "change point (first run after)", "engine.num_speculative_tokens 4 → 0",
		`<a href="night-7/report.html">#7</a>`, `data-kind="trend"`, "regression at run 6",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("trend page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>alert(1)") || strings.Contains(page, `href="javascript:`) {
		t.Error("outside text reached the page unescaped")
	}
	if n := strings.Count(page, "<tr><td><a href="); n != 8 {
		t.Errorf("%d linked run rows, want 8", n)
	}
}
