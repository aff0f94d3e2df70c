package engineadapter

import (
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
)

// modelledEnergy is the simulation's modelled energy over its makespan (issue 39), nil when
// its GPU profile has no power figures.
func modelledEnergy(st refengine.SimStats) *metrics.ModelledEnergy {
	if !st.EnergyKnown {
		return nil
	}
	return &metrics.ModelledEnergy{Joules: st.EnergyJ, Seconds: st.Makespan.Seconds(), GPUs: st.EnergyGPUs, Source: st.EnergySource}
}
