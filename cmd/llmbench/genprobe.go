package main

import (
	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/usecase"
)

// addProbeFlags adds gen's flags for the quality probe presets.
func addProbeFlags(fs *pflag.FlagSet, p *usecase.ProbeOptions) {
	fs.StringVar(&p.Lengths, "probe-lengths", "1k,4k,16k,32k", "long-context-probe: document lengths in tokens, comma-separated (k = 1024)")
	fs.StringVar(&p.Temperatures, "temperatures", "", "quality probes: a temperature sweep, e.g. 0,0.5,1,1.5 (each probe repeated at each; class gets /t=T); default: greedy only")
	fs.IntVar(&p.Samples, "samples", 1, "quality probes: requests per probe and temperature, seeded 1..N (stability across samples)")
}
