package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/usecase"
)

// addEnergyFlags adds run's energy-per-token flags (issue 39; docs/energy.md) into o.
func addEnergyFlags(fs *pflag.FlagSet, o *usecase.EnergyOptions) {
	fs.StringArrayVar(&o.PowerMetrics, "power-metrics", nil, "a DCGM exporter's metrics URL (e.g. http://gpu-node:9400/metrics) to read GPU power from during the run (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, else DCGM_FI_DEV_POWER_USAGE); repeat for several exporters. Without it, --scrape-metrics reads them from the endpoint's /metrics")
	fs.Float64Var(&o.PriceKWh, "price-kwh", 0, "price of a kWh, to report the GPUs' energy cost (in --currency); needs --scrape-metrics or --power-metrics")
}

// addPlanObjectiveFlag adds plan's --objective (issue 39): what "best" means among the
// deployments that meet the target.
func addPlanObjectiveFlag(fs *pflag.FlagSet) *string {
	return fs.String("objective", usecase.PlanObjectiveCost, "what the chosen deployment is best at among those meeting the target: "+
		strings.Join(usecase.PlanObjectives, ", ")+" (output tokens per joule of the GPUs' modelled energy, refengine's power model)")
}

// addSweepPowerFlag adds sweep's --power-metrics into urls: each point reads its energy from
// the exporters (docs/energy.md).
func addSweepPowerFlag(fs *pflag.FlagSet, urls *[]string) {
	fs.StringArrayVar(urls, "power-metrics", nil, "with --endpoint or --serve-cmd: a DCGM exporter's metrics URL of the server's GPUs, polled every second during each point for its energy (J/request column; repeatable)")
}
