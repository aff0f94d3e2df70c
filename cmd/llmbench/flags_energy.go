package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/plan"
	"github.com/llmbench/llmbench/runner"
)

// energyFlags are run's energy-per-token flags (issue 39; docs/energy.md).
type energyFlags struct {
	urls     []string
	priceKWh float64
}

func addEnergyFlags(fs *pflag.FlagSet) *energyFlags {
	f := &energyFlags{}
	fs.StringArrayVar(&f.urls, "power-metrics", nil, "a DCGM exporter's metrics URL (e.g. http://gpu-node:9400/metrics) to read GPU power from during the run (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, else DCGM_FI_DEV_POWER_USAGE); repeat for several exporters. Without it, --scrape-metrics reads them from the endpoint's /metrics")
	fs.Float64Var(&f.priceKWh, "price-kwh", 0, "price of a kWh, to report the GPUs' energy cost (in --currency); needs --scrape-metrics or --power-metrics")
	return f
}

// options checks the flags against scrape (--scrape-metrics) and returns the run's settings.
func (f *energyFlags) options(scrape bool) (runner.PowerOptions, error) {
	o := runner.PowerOptions{URLs: f.urls, PricePerKWh: f.priceKWh}
	if err := o.Validate(); err != nil {
		return o, err
	}
	if o.PricePerKWh > 0 && len(o.URLs) == 0 && !scrape {
		return o, fmt.Errorf("--price-kwh prices the GPUs' energy, which is read with --scrape-metrics (the endpoint's DCGM metrics) or --power-metrics URL")
	}
	return o, nil
}

// addPlanObjectiveFlag adds plan's --objective (issue 39): what "best" means among the
// deployments that meet the target.
func addPlanObjectiveFlag(fs *pflag.FlagSet) *string {
	return fs.String("objective", plan.ObjectiveCost, "what the chosen deployment is best at among those meeting the target: "+
		strings.Join(plan.Objectives, ", ")+" (output tokens per joule of the GPUs' modelled energy, refengine's power model)")
}
