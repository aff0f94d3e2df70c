package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/usecase"
)

// addSaturationFlags adds the saturation watch's flags (run and sweep; issue 39,
// docs/capacity.md) into c.
func addSaturationFlags(fs *pflag.FlagSet, c *usecase.CapacityOptions) {
	fs.BoolVar(&c.StopOnSaturation, "stop-on-saturation", false, "stop an open-loop run (each sweep point) once it is judged over-saturated: requests in flight are cancelled, the rest not sent (docs/capacity.md)")
	fs.DurationVar(&c.SaturationMin, "saturation-min-time", usecase.DefaultSaturationMinTime, "the saturation watch judges nothing before this much of the run (engine time under --time-scale)")
	fs.DurationVar(&c.SaturationTTFT, "saturation-min-ttft", usecase.DefaultSaturationMinTTFT, "a run is over-saturated only when its median TTFT over the watched window exceeds this")
	c.Changed = fs.Changed
}

// addServerSweepFlags adds sweep's flags of a grid of server configurations into c.
func addServerSweepFlags(fs *pflag.FlagSet, c *usecase.CapacityOptions) {
	fs.StringVar(&c.ServeCmd, "serve-cmd", "", "start this server command per --grid configuration ({port}: a free loopback port, {KEY}: the grid's value), sweep it, stop it; writes pareto.json and pareto.html")
	fs.StringArrayVar(&c.Grid, "grid", nil, "a server parameter to vary with --serve-cmd, KEY=V1,V2,… (repeatable: every combination is run)")
	fs.StringVar(&c.GPUs, "gpus-per-server", "1", "GPUs each --serve-cmd server uses, for throughput per GPU: a number or {KEY} of a --grid key")
	fs.StringVar(&c.ServeHealth, "serve-health", "/health", "the path polled on each --serve-cmd server until it answers 2xx")
	fs.DurationVar(&c.ServeStart, "serve-start-timeout", 10*time.Minute, "how long a --serve-cmd server may take to answer its health path (a failed start is recorded and the sweep goes on)")
	fs.DurationVar(&c.ServeStopFor, "serve-stop-timeout", 30*time.Second, "how long a --serve-cmd server has to exit after SIGTERM before SIGKILL")
}
