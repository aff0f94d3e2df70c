package metrics

import (
	"fmt"
	"testing"
)

// modelRecords is n requests per model: model m's TTFT is ttft[m] ms; one request of "sql"
// fails as model_not_found.
func modelRecords(models []string, ttft map[string]float64, n int) SliceSource {
	var recs SliceSource
	for i := 0; i < n; i++ {
		for _, m := range models {
			r := timeline(fmt.Sprintf("%s-%d", m, i), float64(i*100), ttft[m], constGaps(9, 20), nil)
			if m != DefaultModelKey {
				r.Model = m
			}
			recs = append(recs, r)
		}
	}
	bad := timeline("bad", 0, 5, nil, nil)
	bad.Model, bad.Failure, bad.Status, bad.Chunks, bad.FirstToken, bad.OutputTokens = "sql", FailModelNotFound, 404, nil, 0, 0
	return append(recs, bad)
}

func TestSummaryByModel(t *testing.T) {
	ttft := map[string]float64{DefaultModelKey: 50, "sql": 200}
	sum, err := Summarize(modelRecords([]string{DefaultModelKey, "sql"}, ttft, 100), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.ByModel) != 2 {
		t.Fatalf("by_model: %v", sum.ByModel)
	}
	base, sql := sum.ByModel[DefaultModelKey], sum.ByModel["sql"]
	if base.Requests.Total != 100 || sql.Requests.Total != 101 || sql.Requests.Failed != 1 ||
		sql.Requests.Failures[string(FailModelNotFound)] != 1 || base.Requests.Failed != 0 {
		t.Errorf("requests: base %+v, sql %+v", base.Requests, sql.Requests)
	}
	if !near(base.Latency.TTFT.P50, 50, 1) || !near(sql.Latency.TTFT.P50, 200, 2) {
		t.Errorf("TTFT p50: base %v, sql %v; want 50 and 200", base.Latency.TTFT.P50, sql.Latency.TTFT.P50)
	}
	if sum.Requests.Total != 201 {
		t.Errorf("headline requests %d", sum.Requests.Total)
	}
	// One model: no by_model block.
	one, err := Summarize(modelRecords([]string{"sql"}, ttft, 10), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if one.ByModel != nil {
		t.Errorf("one model has a by_model block: %v", one.ByModel)
	}
	// A comparison lists both sides' models.
	ttft2 := map[string]float64{DefaultModelKey: 50, "sql": 100}
	cmp, err := Compare([]Source{modelRecords([]string{DefaultModelKey, "sql"}, ttft, 100)},
		[]Source{modelRecords([]string{DefaultModelKey, "sql"}, ttft2, 100)}, CompareOptions{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.ByModel) != 2 || cmp.ByModel[0].Model != DefaultModelKey || cmp.ByModel[1].Model != "sql" {
		t.Fatalf("comparison by_model: %+v", cmp.ByModel)
	}
	if d := cmp.ByModel[1]; !near(d.Base.TTFTP50, 200, 2) || !near(d.Cand.TTFTP50, 100, 1) || d.Base.Failed != 1 {
		t.Errorf("sql: base %+v cand %+v", d.Base, d.Cand)
	}
}
