package reports

import (
	"strings"
	"testing"
)

// A struct shaped like traces.Stats: fields keep their order, length objects become
// distributions, nested maps become dotted facts.
func TestWorkloadSectionKeepsOrderAndFindsDistributions(t *testing.T) {
	type length struct {
		Min  int     `json:"min"`
		Mean float64 `json:"mean"`
		P50  int     `json:"p50"`
		P99  int     `json:"p99"`
		Max  int     `json:"max"`
	}
	w := struct {
		Count   int            `json:"count"`
		Rate    float64        `json:"rate_per_s"`
		In      length         `json:"input_tokens"`
		Out     length         `json:"output_tokens"`
		Classes map[string]int `json:"classes"`
		Tags    []string       `json:"tags"`
	}{Count: 3000, Rate: 12.25, In: length{1, 800.5, 700, 4000, 9000}, Out: length{2, 150, 120, 600, 1400},
		Classes: map[string]int{"rag": 1, "chat": 2}, Tags: []string{"a", "<b>"}}
	sec, ok := workloadSection(w)
	if !ok {
		t.Fatal("no workload section")
	}
	var chart *chartSpec
	var facts *table
	for _, b := range sec.Blocks {
		if len(b.Charts) > 0 {
			chart = b.Charts[0]
		}
		if b.Table != nil {
			facts = b.Table
		}
	}
	if chart == nil || len(chart.Series) != 2 || chart.Series[0].Name != "input tokens" {
		t.Fatalf("distributions not found: %+v", chart)
	}
	if got := strings.Join(chart.XCats, ","); got != "min,mean,p50,p99,max" {
		t.Errorf("statistics %q", got)
	}
	var keys []string
	for _, r := range facts.Rows {
		keys = append(keys, r[0].Text+"="+r[1].Text)
	}
	want := "count=3,000|rate per s=12.25|classes.chat=2|classes.rag=1|tags=a, <b>"
	if got := strings.Join(keys, "|"); got != want {
		t.Errorf("facts\n got %s\nwant %s", got, want)
	}
	if _, ok := workloadSection(nil); ok {
		t.Error("nil workload gave a section")
	}
}

func TestMeasuredWorkloadWithoutTraceStatistics(t *testing.T) {
	s := fixtureSummary("m", "w")
	s.Workload = nil
	var b strings.Builder
	if err := WriteHTML(&b, s, HTMLOptions{Getenv: noEnv}); err != nil {
		t.Fatal(err)
	}
	// 1,843,200 input tokens over 1,440 requests; 310,000 output tokens over 1,437 successes.
	for _, want := range []string{"Traffic measured", "<td>1,280.0</td>", "<td>215.7</td>", "<td>5.95 : 1</td>"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
