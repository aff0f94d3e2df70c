package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
)

// dcgmStub is a small DCGM exporter on 127.0.0.1: per GPU, a power gauge and, when counters is
// set, an energy counter that grows by stepMJ on every scrape (so that the energy between two
// scrapes is known whatever their timing).
type dcgmStub struct {
	mu       sync.Mutex
	scrapes  int
	powerW   []float64
	counters bool
	stepMJ   float64
}

func (s *dcgmStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := s.scrapes
	s.scrapes++
	s.mu.Unlock()
	fmt.Fprintln(w, "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n# TYPE DCGM_FI_DEV_POWER_USAGE gauge")
	for i, p := range s.powerW {
		fmt.Fprintf(w, "DCGM_FI_DEV_POWER_USAGE{gpu=\"%d\",UUID=\"GPU-%d\",device=\"nvidia%d\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"h\"} %g\n", i, i, i, p)
	}
	if s.counters {
		fmt.Fprintln(w, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter")
		for i := range s.powerW {
			fmt.Fprintf(w, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"%d\",UUID=\"GPU-%d\",device=\"nvidia%d\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"h\"} %d\n", i, i, i, int64(1e9)+int64(float64(n)*s.stepMJ*float64(i+1)))
		}
	}
}

// scrapeExporters polls each URL as a run does: once when the poller starts (before the run's
// first request), at its ticks, and once when it stops (after the last); at least twice. A poll
// times out after a second.
func scrapeExporters(t *testing.T, urls []string) []ServerSamples {
	t.Helper()
	var out []ServerSamples
	for _, u := range urls {
		s := startScraper(context.Background(), scrapeOptions{URL: u, Exact: true, Interval: 50 * time.Millisecond})
		s.Stop()
		out = append(out, s.Data())
	}
	return out
}

// windowOf is a summary whose measured window spans the first to the last scrape of d.
func windowOf(d ServerSamples) *metrics.Summary {
	s := &metrics.Summary{}
	s.Throughput.WindowStartS = d.Samples[0].T
	s.Throughput.WindowEndS = d.Samples[len(d.Samples)-1].T
	s.Throughput.RequestsPerS = 2
	s.Throughput.OutputTokensPerS = 100
	return s
}

// TestPowerExporterCounters: two GPUs with energy counters: the energy is their increase
// between the first and last scrapes, exactly, from the counters (the gauges are not used).
func TestPowerExporterCounters(t *testing.T) {
	stub := &dcgmStub{powerW: []float64{123, 456}, counters: true, stepMJ: 5000}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	data := scrapeExporters(t, []string{srv.URL + "/metrics"})
	n := len(data[0].Samples)
	if n < 2 {
		t.Fatalf("%d scrapes, want at least 2", n)
	}
	e := runEnergy(nil, data, windowOf(data[0]), 0.3)
	want := float64(n-1) * (5 + 10) // J: GPU 0 grows 5 J a scrape, GPU 1 10 J
	if !e.Available || e.Method != metrics.EnergyByCounter || e.GPUs != 2 || math.Abs(*e.Joules-want) > 1e-6*want {
		t.Fatalf("%+v joules %v, want counter, 2 GPUs, %v J", e, deref(e.Joules), want)
	}
	if math.Abs(*e.JoulesPerRequest-*e.AvgPowerW/2) > 1e-9 || math.Abs(*e.Cost-want/3.6e6*0.3) > 1e-12 {
		t.Fatalf("J/request %v, cost %v", *e.JoulesPerRequest, *e.Cost)
	}
}

// TestPowerExporterGaugesOnly: an exporter with power gauges only: the trapezoid of constant
// gauges is their sum, whatever the scrape times.
func TestPowerExporterGaugesOnly(t *testing.T) {
	srv := httptest.NewServer(&dcgmStub{powerW: []float64{300, 100}})
	defer srv.Close()
	data := scrapeExporters(t, []string{srv.URL + "/metrics"})
	e := runEnergy(nil, data, windowOf(data[0]), 0)
	if !e.Available || e.Method != metrics.EnergyByPower || math.Abs(*e.AvgPowerW-400) > 1e-9 || math.Abs(*e.OutputTokensPerJoule-100.0/400) > 1e-12 {
		t.Fatalf("%+v power %v, want power samples, 400 W", e, deref(e.AvgPowerW))
	}
	if e.Cost != nil {
		t.Fatal("a cost without a price")
	}
}

// TestPowerExporterBad: an exporter that answers garbage, one that is not there and one that
// never answers make the power unknown (null figures and a note naming it), never zero; so
// does one bad exporter beside a good one (a partial sum would undercount).
func TestPowerExporterBad(t *testing.T) {
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>\x00\xff DCGM_FI_DEV_POWER_USAGE{gpu=\"0\" nope\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} -5\n"))
	}))
	defer garbage.Close()
	notDCGM := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("vllm:num_requests_running 3\n"))
	}))
	defer notDCGM.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL + "/metrics"
	gone.Close()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hang.Close()
	defer close(release)
	good := httptest.NewServer(&dcgmStub{powerW: []float64{200}})
	defer good.Close()
	cases := []struct {
		name, why string
		urls      []string
	}{
		{"garbage", "no GPU power reading spans the measured window", []string{garbage.URL}},
		{"not DCGM", "exports no DCGM_FI_DEV_POWER_USAGE", []string{notDCGM.URL}},
		{"absent", "no scrape succeeded", []string{goneURL}},
		{"hangs", "no scrape succeeded", []string{hang.URL}},
		{"one bad of two", "no scrape succeeded", []string{good.URL, goneURL}},
	}
	for _, c := range cases {
		data := scrapeExporters(t, c.urls)
		sum := &metrics.Summary{}
		sum.Throughput.WindowStartS, sum.Throughput.WindowEndS, sum.Throughput.RequestsPerS = -10, 10, 1
		opts := &Options{pricePerKWh: 0.2}
		for _, d := range data {
			opts.power = append(opts.power, fixedScraper(d))
		}
		addEnergy(opts, sum)
		e := sum.Energy
		if e == nil || e.Available || e.Joules != nil || e.AvgPowerW != nil || e.Cost != nil || !strings.Contains(e.Note, c.why) {
			t.Errorf("%s: %+v", c.name, e)
			continue
		}
		b, _ := json.Marshal(e)
		if !strings.Contains(string(b), `"avg_power_w":null`) {
			t.Errorf("%s: JSON %s", c.name, b)
		}
		if len(sum.Warnings) != 1 || !strings.HasPrefix(sum.Warnings[0], "energy unknown: ") {
			t.Errorf("%s: warnings %q", c.name, sum.Warnings)
		}
	}
}

// fixedScraper is a stopped scraper holding d.
func fixedScraper(d ServerSamples) *scraper {
	s := &scraper{data: d, scale: 1, epoch: time.Unix(0, 0), stop: make(chan struct{}), done: make(chan struct{})}
	for _, smp := range d.Samples {
		s.at = append(s.at, time.Unix(0, 0).Add(time.Duration(smp.T*float64(time.Second))))
	}
	close(s.done)
	return s
}

// TestParseScrapeDCGM: readings are kept per GPU (UUID, else gpu, else the label set), a
// negative reading is left unknown, and the sums still hold every metric.
func TestParseScrapeDCGM(t *testing.T) {
	in := `DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-b",modelName="x \"y\" }"} 250.5
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a"} 100
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{UUID="GPU-a",gpu="0"} 7e6
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="1",UUID="GPU-b"} -1
DCGM_FI_DEV_POWER_USAGE{gpu="2"} 3
DCGM_FI_DEV_POWER_USAGE 4
vllm:num_requests_running 2
`
	sums, gpus := parseScrape(strings.NewReader(in))
	if sums["vllm:num_requests_running"] != 2 || sums[dcgmPowerName] != 357.5 {
		t.Fatalf("sums %v", sums)
	}
	want := []GPUReading{{"", 4, -1}, {"UUID=GPU-a", 100, 7e6}, {"UUID=GPU-b", 250.5, -1}, {"gpu=2", 3, -1}}
	if fmt.Sprint(gpus) != fmt.Sprint(want) {
		t.Fatalf("gpus %v, want %v", gpus, want)
	}
}

// FuzzParseScrape: any exposition parses without panicking into finite, non-negative or -1
// readings with distinct GPU keys, and the energy from two such scrapes encodes as JSON.
func FuzzParseScrape(f *testing.F) {
	f.Add("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-1\"} 312.5\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-1\"} 123456789\n")
	f.Add("DCGM_FI_DEV_POWER_USAGE{UUID=\"a\\\"b\",gpu=\"\"} +Inf\nDCGM_FI_DEV_POWER_USAGE{gpu=\"1\"} NaN\n")
	f.Add("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{=\"x\"} 1\n{} 2\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\" 5")
	f.Fuzz(func(t *testing.T, s string) {
		_, gpus := parseScrape(strings.NewReader(s))
		seen := map[string]bool{}
		for _, g := range gpus {
			if seen[g.GPU] {
				t.Fatalf("GPU %q twice", g.GPU)
			}
			seen[g.GPU] = true
			for _, v := range []float64{g.PowerW, g.EnergyMJ} {
				if v != v || (v < 0 && v != -1) {
					t.Fatalf("reading %v", v)
				}
			}
		}
		d := ServerSamples{Endpoint: "x", Samples: []ServerSample{{T: 0, GPUs: gpus}, {T: 1, GPUs: gpus}}}
		sum := &metrics.Summary{}
		sum.Throughput.WindowEndS, sum.Throughput.RequestsPerS = 1, 1
		e := runEnergy(nil, []ServerSamples{d}, sum, 1)
		if _, err := json.Marshal(e); err != nil {
			t.Fatalf("energy does not encode: %v", err)
		}
	})
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestAttachRunFactsEnergy: a comparison of results directories carries their summaries'
// energy side by side.
func TestAttachRunFactsEnergy(t *testing.T) {
	dir := func(jpr float64) string {
		d := t.TempDir()
		w, tpj := 300.0, 1/jpr
		s := &metrics.Summary{Schema: metrics.SummarySchema, Energy: &metrics.Energy{Available: true, JoulesPerRequest: &jpr, OutputTokensPerJoule: &tpj, AvgPowerW: &w}}
		if err := WriteJSON(d+"/"+SummaryFile, s); err != nil {
			t.Fatal(err)
		}
		return d
	}
	c := &metrics.Comparison{}
	AttachRunFacts(c, []string{dir(50)}, []string{dir(40)})
	if c.Energy == nil || *c.Energy.Base.JoulesPerRequest != 50 || math.Abs(*c.Energy.JoulesPerRequestChange+0.2) > 1e-12 {
		t.Fatalf("energy %+v", c.Energy)
	}
}
