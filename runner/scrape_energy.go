package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// Energy per token (issue 39): GPU power read from a DCGM exporter's metrics, under the names
// and units of NVIDIA dcgm-exporter's default counters: DCGM_FI_DEV_POWER_USAGE (gauge, W) and
// DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (counter, mJ since boot, without a _total suffix). Each
// GPU is one series, told apart by its UUID label (else gpu, else the whole label set).
const (
	dcgmPowerName  = "DCGM_FI_DEV_POWER_USAGE"
	dcgmEnergyName = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
)

// GPUReading is one GPU's power readings in one scrape; a field is -1 when not exported.
type GPUReading struct {
	GPU      string  `json:"gpu"`
	PowerW   float64 `json:"power_w"`
	EnergyMJ float64 `json:"energy_mj"`
}

// PowerFile holds the --power-metrics exporters' scrapes.
const PowerFile = "power-metrics.json"

// PowerOptions are a run's energy settings.
type PowerOptions struct {
	// URLs are DCGM exporters' metrics URLs (polled as given). Empty: the GPU power comes from
	// the target's own /metrics when the run scrapes it.
	URLs []string
	// PricePerKWh, when > 0, prices the energy (in the summary's currency).
	PricePerKWh float64
}

// Validate checks the URLs and the price.
func (o PowerOptions) Validate() error {
	for _, u := range o.URLs {
		if _, err := exactURL(u); err != nil {
			return fmt.Errorf("--power-metrics %q: %w", u, err)
		}
	}
	if o.PricePerKWh < 0 || o.PricePerKWh != o.PricePerKWh {
		return fmt.Errorf("--price-kwh %g: must be >= 0", o.PricePerKWh)
	}
	return nil
}

// exactURL checks that u is an absolute http(s) URL.
func exactURL(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	if (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", fmt.Errorf("want an http:// or https:// URL of the exporter's metrics, e.g. http://gpu-node:9400/metrics")
	}
	return u, nil
}

// parseScrape reads one scrape: the per-name sums parsePrometheus returns and the DCGM power
// readings per GPU, in GPU order.
func parseScrape(r io.Reader) (map[string]float64, []GPUReading) {
	sums := map[string]float64{}
	byGPU := map[string]*GPUReading{}
	eachSample(r, func(name, labels string, v float64) {
		sums[name] += v
		if name != dcgmPowerName && name != dcgmEnergyName {
			return
		}
		k := gpuKey(labels)
		g := byGPU[k]
		if g == nil {
			g = &GPUReading{GPU: k, PowerW: -1, EnergyMJ: -1}
			byGPU[k] = g
		}
		if v < 0 {
			return // not a power or an energy: left unknown
		}
		if name == dcgmPowerName {
			g.PowerW = v
		} else {
			g.EnergyMJ = v
		}
	})
	if len(byGPU) == 0 {
		return sums, nil
	}
	out := make([]GPUReading, 0, len(byGPU))
	for _, g := range byGPU {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GPU < out[j].GPU })
	return sums, out
}

// gpuKey names a GPU series by its UUID label, else its gpu label, else its whole label set.
func gpuKey(labels string) string {
	for _, l := range []string{"UUID", "gpu"} {
		if v, ok := labelValue(labels, l); ok && v != "" {
			return l + "=" + v
		}
	}
	return labels
}

// labelValue is the value of label name in a label set as written ({a="x",b="y"}), unescaped
// only of \" and \\ (enough to compare).
func labelValue(labels, name string) (string, bool) {
	s := strings.TrimSuffix(strings.TrimPrefix(labels, "{"), "}")
	for s != "" {
		s = strings.TrimLeft(s, " ,")
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return "", false
		}
		key := strings.TrimSpace(s[:eq])
		var b strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			b.WriteByte(s[i])
		}
		if key == name {
			return b.String(), true
		}
		if i >= len(s) {
			return "", false
		}
		s = s[i+1:]
	}
	return "", false
}

// startPowerScrapers polls each exporter of o.URLs (as given, with no key or headers: they are
// for the target only) every interval (0: 1 s).
func startPowerScrapers(ctx context.Context, o PowerOptions, scale float64, interval time.Duration) []*scraper {
	var out []*scraper
	for _, u := range o.URLs {
		out = append(out, startScraper(ctx, scrapeOptions{URL: u, Exact: true, TimeScale: scale, Interval: interval}))
	}
	return out
}

// powerArm starts polling an A/B arm's exporters (real time: ab's endpoint arms run at time
// scale 1) and returns the pollers with produce wrapped to stop them when the run's requests
// are done, as RunHTTP does for run --power-metrics.
func powerArm(ctx context.Context, urls []string, produce Producer) ([]*scraper, Producer) {
	power := startPowerScrapers(ctx, PowerOptions{URLs: urls}, 1, 0)
	return power, func(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*Produced, error) {
		p, err := produce(ctx, trace, sink)
		for _, ps := range power {
			ps.Stop()
		}
		return p, err
	}
}

// CheckExporterURL checks that u can be polled as a DCGM exporter's metrics URL.
func CheckExporterURL(u string) error {
	_, err := exactURL(u)
	return err
}

// runEnergy is the run's energy over the summary's window: from the power exporters when the
// run has any, else from the target's scrape; nil when the run read neither.
func runEnergy(target *ServerSamples, exporters []ServerSamples, sum *metrics.Summary, price float64) *metrics.Energy {
	srcs := exporters
	if len(srcs) == 0 {
		if target == nil {
			return nil
		}
		srcs = []ServerSamples{*target}
	}
	o := metrics.EnergyOptions{StartS: sum.Throughput.WindowStartS, EndS: sum.Throughput.WindowEndS,
		RequestsPerS: sum.Throughput.RequestsPerS, OutputTokensPerS: sum.Throughput.OutputTokensPerS,
		PricePerKWh: price}
	if sum.Cost != nil {
		o.Currency = sum.Cost.Currency
	}
	var series []metrics.PowerSeries
	for _, d := range srcs {
		o.Sources = append(o.Sources, d.Endpoint)
		s, why := gpuSeries(d)
		if why != "" {
			u := metrics.UnknownEnergy(o.Sources, d.Endpoint+": "+why)
			u.WindowStartS, u.WindowEndS = o.StartS, o.EndS
			return u
		}
		series = append(series, s...)
	}
	return metrics.EnergyOver(series, o)
}

// gpuSeries splits an endpoint's scrapes into one series per GPU, or says why it has none.
func gpuSeries(d ServerSamples) ([]metrics.PowerSeries, string) {
	if len(d.Samples) == 0 {
		why := "no scrape succeeded"
		if d.LastError != "" {
			why += " (" + d.LastError + ")"
		}
		return nil, why
	}
	idx := map[string]int{}
	var out []metrics.PowerSeries
	for _, smp := range d.Samples {
		for _, g := range smp.GPUs {
			i, ok := idx[g.GPU]
			if !ok {
				i = len(out)
				idx[g.GPU] = i
				out = append(out, metrics.PowerSeries{Key: d.Endpoint + " " + g.GPU})
			}
			out[i].Points = append(out[i].Points, metrics.PowerPoint{T: smp.T, PowerW: g.PowerW, EnergyMJ: g.EnergyMJ})
		}
	}
	if len(out) == 0 {
		return nil, "it exports no " + dcgmPowerName + " or " + dcgmEnergyName
	}
	return out, ""
}

// savePower stops the power exporters' pollers and writes their scrapes to power-metrics.json.
func savePower(opts Options, prod *Produced) error {
	if len(opts.power) == 0 {
		return nil
	}
	data := make([]ServerSamples, 0, len(opts.power))
	for _, ps := range opts.power {
		ps.Stop()
		if prod != nil && !prod.Start.IsZero() {
			ps.SetEpoch(prod.Start)
		}
		data = append(data, ps.Data())
	}
	return WriteJSON(filepath.Join(opts.OutDir, PowerFile), data)
}

// addEnergy sets sum.Energy from what the run read of GPU power, with a warning when the power
// is unknown.
func addEnergy(opts *Options, sum *metrics.Summary) {
	var target *ServerSamples
	if opts.scraper != nil {
		d := opts.scraper.Data()
		target = &d
	}
	var exporters []ServerSamples
	for _, ps := range opts.power {
		exporters = append(exporters, ps.Data())
	}
	if target != nil && len(exporters) == 0 && !hasGPUReadings(*target) && opts.pricePerKWh == 0 {
		return // a scrape of a server that exports no power, and no energy asked for: say nothing
	}
	e := runEnergy(target, exporters, sum, opts.pricePerKWh)
	if e == nil {
		return
	}
	sum.Energy = e
	if !e.Available {
		sum.Warnings = append(sum.Warnings, "energy unknown: "+e.Note)
	}
}

// hasGPUReadings reports whether any scrape of d carried DCGM power readings.
func hasGPUReadings(d ServerSamples) bool {
	for _, s := range d.Samples {
		if len(s.GPUs) > 0 {
			return true
		}
	}
	return false
}

// reEnergy recomputes a resummarized run's energy over its new window from the scrapes saved
// in dir (server-metrics.json, power-metrics.json) at old's price; without them it keeps
// old's.
func reEnergy(dir string, sum, old *metrics.Summary) {
	if old.Energy == nil {
		return
	}
	sum.Energy = old.Energy
	var exporters []ServerSamples
	if data, err := os.ReadFile(filepath.Join(dir, PowerFile)); err == nil {
		if json.Unmarshal(data, &exporters) != nil {
			return
		}
	}
	target, err := readServerSamples(filepath.Join(dir, ScrapeFile))
	if err != nil {
		target = nil
	}
	if e := runEnergy(target, exporters, sum, old.Energy.PricePerKWh); e != nil {
		sum.Energy = e
		if !e.Available {
			sum.Warnings = append(sum.Warnings, "energy unknown: "+e.Note)
		}
	}
}

// dirsEnergy is each results directory's energy block (nil where its summary has none or
// cannot be read).
func dirsEnergy(dirs []string) []*metrics.Energy {
	out := make([]*metrics.Energy, len(dirs))
	for i, d := range dirs {
		if s, err := ReadSummary(d); err == nil {
			out[i] = s.Energy
		}
	}
	return out
}
