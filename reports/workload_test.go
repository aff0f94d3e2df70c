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
	}{Count: 3, Rate: 12.25, In: length{1, 800.5, 700, 4000, 9000}, Out: length{2, 150, 120, 600, 1400},
		Classes: map[string]int{"rag": 1, "chat": 2}, Tags: []string{"a", "<b>"}}
	sec, ok := workloadSection(w)
	if !ok {
		t.Fatal("no workload section")
	}
	var chart *chartSpec
	var tables []*table
	for _, b := range sec.Blocks {
		if len(b.Charts) > 0 {
			chart = b.Charts[0]
		}
		if b.Table != nil {
			tables = append(tables, b.Table)
		}
	}
	if len(tables) != 2 || tables[0].Caption != "Traffic sent" || tables[1].Caption != "Requests per class" {
		t.Fatalf("tables %+v", tables)
	}
	if chart == nil || len(chart.Series) != 2 || chart.Series[0].Name != "input tokens" {
		t.Fatalf("distributions not found: %+v", chart)
	}
	if got := strings.Join(chart.XCats, ","); got != "min,mean,p50,p99,max" {
		t.Errorf("statistics %q", got)
	}
	rows := func(tb *table) string {
		var keys []string
		for _, r := range tb.Rows {
			var cells []string
			for _, c := range r {
				cells = append(cells, c.Text)
			}
			keys = append(keys, strings.Join(cells, "="))
		}
		return strings.Join(keys, "|")
	}
	// Known facts in words with their units, an unknown one by its key; classes on their own.
	if got, want := rows(tables[0]), "requests=3|mean arrival rate=12.25 req/s|tags=a, <b>"; got != want {
		t.Errorf("traffic sent\n got %s\nwant %s", got, want)
	}
	if got, want := rows(tables[1]), "chat=2=66.7%|rag=1=33.3%"; got != want {
		t.Errorf("classes\n got %s\nwant %s", got, want)
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
	// 1,843,200 input tokens (the succeeded requests' prompts) and 310,000 output tokens over
	// 1,437 successes.
	for _, want := range []string{"Traffic measured", "<td>1,282.7</td>", "<td>215.7</td>", "<td>5.95 : 1</td>"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
