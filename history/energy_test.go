package history

import (
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestScalarsEnergy: a run whose power was known stores its energy figures under names
// LookupMetric knows with their directions; a run whose power was unknown stores none (no
// zeros that would read as measurements).
func TestScalarsEnergy(t *testing.T) {
	jpr, tpj, w, cpr := 62.4, 2.34, 278.0, 2.6e-6
	known := &metrics.Summary{Energy: &metrics.Energy{Available: true, JoulesPerRequest: &jpr, OutputTokensPerJoule: &tpj, AvgPowerW: &w, CostPerRequest: &cpr}}
	got := Scalars(known)
	for name, want := range map[string]float64{"energy.joules_per_request": jpr, "energy.output_tokens_per_joule": tpj, "energy.avg_power_w": w, "energy.cost_per_request": cpr} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
		if _, err := LookupMetric(name); err != nil {
			t.Errorf("LookupMetric(%s): %v", name, err)
		}
	}
	if m, _ := LookupMetric("energy.output_tokens_per_joule"); m.Better != metrics.BetterHigher {
		t.Errorf("tokens per joule: better %q", m.Better)
	}
	unknown := &metrics.Summary{Energy: metrics.UnknownEnergy(nil, "no scrape succeeded")}
	for name := range Scalars(unknown) {
		if len(name) > 7 && name[:7] == "energy." {
			t.Errorf("unknown power stored %s", name)
		}
	}
}
