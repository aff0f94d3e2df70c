package usecase

import (
	"fmt"

	"github.com/llmbench/llmbench/runner"
)

// EnergyOptions are run's energy-per-token flags (issue 39; docs/energy.md).
type EnergyOptions struct {
	// PowerMetrics are DCGM exporters' metrics URLs (--power-metrics, repeatable).
	PowerMetrics []string
	// PriceKWh prices the GPUs' energy (--price-kwh; 0: not priced).
	PriceKWh float64
}

// Options checks the flags against scrape (--scrape-metrics) and returns the run's settings.
func (f EnergyOptions) Options(scrape bool) (runner.PowerOptions, error) {
	o := runner.PowerOptions{URLs: f.PowerMetrics, PricePerKWh: f.PriceKWh}
	if err := o.Validate(); err != nil {
		return o, err
	}
	if o.PricePerKWh > 0 && len(o.URLs) == 0 && !scrape {
		return o, fmt.Errorf("--price-kwh prices the GPUs' energy, which is read with --scrape-metrics (the endpoint's DCGM metrics) or --power-metrics URL")
	}
	return o, nil
}
