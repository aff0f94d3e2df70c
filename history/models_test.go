package history

import (
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// A run of several models stores each model's headline as model.NAME.METRIC (issue 38).
func TestScalarsPerModel(t *testing.T) {
	c := &metrics.ClassSummary{Requests: metrics.Requests{Total: 40, Failed: 2}}
	c.Latency.TTFT = metrics.Dist{Count: 38, P50: 30, P99: 120}
	c.Throughput.OutputTokensPerS = 500
	s := &metrics.Summary{ByModel: map[string]*metrics.ClassSummary{"sql-lora": c, metrics.DefaultModelKey: {}}}
	got := Scalars(s)
	for k, want := range map[string]float64{"model.sql-lora.requests": 40, "model.sql-lora.failures.fraction": 0.05,
		"model.sql-lora.ttft.p50": 30, "model.sql-lora.ttft.p99": 120, "model.sql-lora.throughput.output_tokens_per_s": 500,
		"model.(--model).requests": 0} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	if _, ok := got["model.sql-lora.tpot.p50"]; ok {
		t.Error("a latency without samples was stored")
	}
}

func TestLookupModelMetric(t *testing.T) {
	for name, unit := range map[string]string{"model.sql-lora.ttft.p99": "ms", "model.org/llama-3.1.e2e.p50": "ms",
		"model.a.requests": "requests", "model.a.failures.fraction": "fraction"} {
		mi, err := LookupMetric(name)
		if err != nil || (unit != "fraction" && mi.Unit != unit) {
			t.Errorf("LookupMetric(%q) = %+v, %v; want unit %s", name, mi, err, unit)
		}
	}
	if _, err := LookupMetric("model.ttft.p99"); err == nil {
		t.Error("model.ttft.p99 (no model name) resolved")
	}
}
