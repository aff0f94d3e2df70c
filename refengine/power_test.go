package refengine

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/refengine/perf"
)

// stillClock is a clock that stands still at now until a test moves it; sleeps wait for ctx.
type stillClock struct {
	mu  sync.Mutex
	now time.Duration
}

func (c *stillClock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *stillClock) Wall(d time.Duration) time.Time { return time.Unix(0, 0).Add(d) }
func (c *stillClock) SleepUntil(ctx context.Context, t time.Duration) error {
	if c.Now() >= t {
		return ctx.Err()
	}
	<-ctx.Done()
	return ctx.Err()
}
func (c *stillClock) set(d time.Duration) {
	c.mu.Lock()
	c.now = d
	c.mu.Unlock()
}

// TestPowerIdleEngine: an engine with nothing to do draws its profile's idle power per GPU, and
// its energy is idle power × time × GPUs.
func TestPowerIdleEngine(t *testing.T) {
	clk := &stillClock{}
	e, err := New(Config{GPU: "h200", Model: "llama-3.1-70b", TP: 4, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	clk.set(10 * time.Second)
	r, ok := e.Power()
	if !ok {
		t.Fatal("h200 has no power model")
	}
	if len(r.GPUs) != 4 || r.PowerW != 4*80 || math.Abs(r.EnergyJ-4*80*10) > 1e-9 {
		t.Fatalf("idle h200 ×4 at 10 s: %d GPUs, %v W, %v J; want 4, 320 W, 3200 J", len(r.GPUs), r.PowerW, r.EnergyJ)
	}
}

// TestPowerModelArithmetic checks the energy and the trailing power of a pool against the
// model's formula, with one step in progress.
func TestPowerModelArithmetic(t *testing.T) {
	pw := perf.Power{IdleW: 100, BoardW: 500, MemoryBoundFloor: 0.25}
	c := &core{busySec: 4, computeSec: 1}
	// Steps of the last second: [9.2, 9.6] with compute share 0.5.
	c.recent = []stepSpan{{start: 9200 * time.Millisecond, end: 9600 * time.Millisecond, compute: 0.5}}
	cl := &cluster{pools: []*pool{{c: c}}}
	r := clusterPower(cl, pw, 2, 10*time.Second, "x")
	// Energy per GPU: 100·10 + 400·(0.25·4 + 0.75·1) = 1000 + 700.
	if math.Abs(r.EnergyJ-2*1700) > 1e-9 {
		t.Errorf("energy %v J, want %v", r.EnergyJ, 2*1700.0)
	}
	// Power per GPU: 100 + 400·(0.25·0.4 + 0.75·0.2)/1 = 200.
	if math.Abs(r.GPUs[0].PowerW-200) > 1e-9 || math.Abs(r.PowerW-400) > 1e-9 {
		t.Errorf("power %v W per GPU (%v in all), want 200 (400)", r.GPUs[0].PowerW, r.PowerW)
	}
}

// TestPowerOverHTTP serves requests and checks the /metrics DCGM series against Power: the
// energy counter never goes back, grows by at least idle and at most board power over the
// time passed, and the exposition carries dcgm-exporter's names, units and labels.
func TestPowerOverHTTP(t *testing.T) {
	e, url := startEngine(t, Config{GPU: "h100", Model: "llama-3.1-8b", TimeScale: 50})
	before, _ := e.Power()
	for i := 0; i < 3; i++ {
		if resp, body := post(t, url+"/v1/completions", `{"prompt":"hello there","max_tokens":64,"ignore_eos":true}`); resp.StatusCode != 200 {
			t.Fatalf("completion: %d %s", resp.StatusCode, body)
		}
	}
	after, ok := e.Power()
	if !ok {
		t.Fatal("no power model")
	}
	dt := (after.At - before.At).Seconds()
	dE := after.EnergyJ - before.EnergyJ
	if dt <= 0 || dE < 70*dt*(1-1e-9) || dE > 700*dt*(1+1e-9) {
		t.Fatalf("energy grew %v J over %v s: outside [idle, board] power", dE, dt)
	}
	if after.EnergyJ-70*after.At.Seconds() <= 1e-9 {
		t.Fatalf("after serving, energy %v J is idle-only (%v s)", after.EnergyJ, after.At.Seconds())
	}
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		"# TYPE DCGM_FI_DEV_POWER_USAGE gauge",
		"# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter",
		`DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-00000000-0000-4000-8000-000000000000",device="nvidia0",modelName="h100-sxm (llmbench reference engine, simulated)",Hostname="llmbench-refengine"} `,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestPowerUnknownGPU: a GPU without power figures exports no DCGM series.
func TestPowerUnknownGPU(t *testing.T) {
	if _, ok := perf.PowerOf(perf.GPU{Name: "custom-gpu"}); ok {
		t.Fatal("a GPU without figures got a power model")
	}
	if _, ok := perf.PowerOf(perf.GPU{Name: "x", Power: perf.Power{IdleW: 500, BoardW: 100}}); ok {
		t.Fatal("idle above board was accepted")
	}
	if p, ok := perf.PowerOf(perf.GPU{Name: "A100-80GB"}); !ok || p.BoardW != 400 {
		t.Fatalf("a100-80gb: %+v %v", p, ok)
	}
}

// TestSimulateEnergy: a simulation's energy over its makespan lies between what its GPUs draw
// idle plus the floor's share of the dynamic range while busy, and idle plus the whole range
// while busy; replicas and tensor-parallel ranks each add their GPUs.
func TestSimulateEnergy(t *testing.T) {
	reqs := make([]SimRequest, 40)
	for i := range reqs {
		reqs[i] = SimRequest{ID: fmt.Sprint(i), Arrival: time.Duration(i) * 100 * time.Millisecond, PromptTokens: 1024 + 64*i, MaxTokens: 64, IgnoreEOS: true}
	}
	pw, _ := perf.PowerOf(perf.GPU{Name: "h100-sxm"})
	for _, c := range []struct {
		tp, replicas, gpus int
	}{{1, 1, 1}, {2, 1, 2}, {1, 3, 3}} {
		res, err := SimulateCluster(reqs, Config{GPU: "h100", Model: "llama-3.1-8b", TP: c.tp}, ClusterOptions{Replicas: c.replicas})
		if err != nil {
			t.Fatal(err)
		}
		st := res.Stats
		if !st.EnergyKnown || st.EnergyGPUs != c.gpus || !strings.Contains(st.EnergySource, "H100 data sheet") {
			t.Fatalf("tp %d × %d: %+v", c.tp, c.replicas, st)
		}
		idle := pw.IdleW * float64(c.gpus) * st.Makespan.Seconds()
		busy := st.BusyTime.Seconds() * float64(c.tp) // BusyTime sums the replicas' pools
		dyn := pw.BoardW - pw.IdleW
		lo, hi := idle+dyn*pw.Floor()*busy, idle+dyn*busy
		if st.EnergyJ < lo*(1-1e-9) || st.EnergyJ > hi*(1+1e-9) || st.EnergyJ <= lo {
			t.Errorf("tp %d × %d: %v J outside (%v, %v]", c.tp, c.replicas, st.EnergyJ, lo, hi)
		}
	}
}
