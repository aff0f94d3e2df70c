package refengine

import (
	"strconv"
	"time"

	"github.com/llmbench/llmbench/refengine/perf"
)

// The engine's power model (issue 39). Each GPU of a pool draws its profile's idle power when
// the pool has no step on it, and during a step idle + (board − idle) × a, where the step's
// activity a = floor + (1 − floor) × (its compute time / its duration) from the roofline
// (perf.Power.MemoryBoundFloor: a memory-bound step of small-batch decode draws the floor's
// share of the dynamic range, a compute-bound prefill the whole board power). Its energy up to
// t is idle·t + (board − idle)·Σ(step time × a). All TP GPUs of a pool run the same steps.
//
// What the engine reports is ground truth for the model, not a measurement: the cumulative
// energy is exact at any time, and the power gauge is the average over the trailing
// powerWindow of simulated time, as nvidia-smi's and DCGM's power reading averages over about
// a second on A100 and H100 boards.

// powerWindow is the span the power gauge averages over (simulated time).
const powerWindow = time.Second

// stepSpan is one step's time on a pool's GPUs and its compute share (compute time over
// duration, 0..1).
type stepSpan struct {
	start, end time.Duration
	compute    float64
}

// computeShare is the planned step's compute time over its duration, from the roofline (0
// when the pricer is not one: a test's).
func (c *core) computeShare() float64 {
	r, ok := c.pricer.(*perf.Roofline)
	if !ok {
		return 0
	}
	b := r.Step(c.work)
	if b.Total <= 0 {
		return 0
	}
	return min(1, float64(b.Compute)/float64(b.Total))
}

// noteStep keeps the step that ended at end, of duration d, and forgets the steps that ended
// before the power window of end. It runs before the next step is planned (c.work is still
// this step's).
func (c *core) noteStep(end, d time.Duration) {
	share := c.computeShare()
	c.busySec += d.Seconds()
	c.computeSec += d.Seconds() * share
	c.recent = append(c.recent, stepSpan{start: end - d, end: end, compute: share})
	i := 0
	for i < len(c.recent) && c.recent[i].end <= end-powerWindow {
		i++
	}
	// Drop the old steps by reslicing: append copies only the live ones to a new array when it
	// reaches the end of this one, so a step costs amortized O(1) and memory stays bounded.
	c.recent = c.recent[i:]
}

// overlap is the length of [s, e] within [a, b].
func overlap(s, e, a, b time.Duration) time.Duration {
	return max(0, min(e, b)-max(s, a))
}

// active is the pool's step time within [a, now] weighted by activity (seconds): its steps'
// time, and their time × compute share, which activity combines with the floor. from0 takes
// every step since the start (kept as sums), else only the recent ones.
func (p *pool) active(a, now time.Duration, from0 bool, floor float64) float64 {
	var busy, comp float64
	if from0 {
		busy, comp = p.c.busySec, p.c.computeSec
	} else {
		for _, s := range p.c.recent {
			o := overlap(s.start, s.end, a, now).Seconds()
			busy += o
			comp += o * s.compute
		}
	}
	if p.busy {
		o := overlap(p.end-p.dur, p.end, a, now).Seconds()
		busy += o
		comp += o * p.c.computeShare()
	}
	return floor*busy + (1-floor)*comp
}

// GPUPower is the modelled power of one GPU.
type GPUPower struct {
	// Index is the GPU's number in the engine (pool by pool, TP ranks in order).
	Index int
	// PowerW is the average power over the last second of simulated time (W); EnergyJ the
	// energy since the engine started (J).
	PowerW, EnergyJ float64
}

// PowerReading is the engine's modelled power at simulated time At.
type PowerReading struct {
	At   time.Duration
	GPU  string // the GPU profile's name
	GPUs []GPUPower
	// PowerW and EnergyJ are the sums over the GPUs.
	PowerW, EnergyJ float64
	// Model names the figures' sources (perf.Power.Source).
	Model perf.Power
}

// Power returns the engine's modelled power now; ok is false when its GPU profile has no
// power figures (a profile file without idle_w and board_w).
func (e *Engine) Power() (PowerReading, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.powerLocked()
}

// powerLocked is Power with e.mu held.
func (e *Engine) powerLocked() (PowerReading, bool) {
	g := e.cfg.roof.Config().GPU
	pw, ok := perf.PowerOf(g)
	if !ok {
		return PowerReading{}, false
	}
	now := max(e.cl.now, e.clock.Now())
	return clusterPower(e.cl, pw, e.cfg.TP, now, g.Name), true
}

// clusterPower is the modelled power of cl's pools, tp GPUs each, at now.
func clusterPower(cl *cluster, pw perf.Power, tp int, now time.Duration, gpu string) PowerReading {
	r := PowerReading{At: now, GPU: gpu, Model: pw}
	dyn := pw.BoardW - pw.IdleW
	floor := pw.Floor()
	for _, p := range cl.pools {
		win := min(powerWindow, now)
		w := pw.IdleW
		if win > 0 {
			w += dyn * p.active(now-win, now, false, floor) / win.Seconds()
		}
		j := pw.IdleW*now.Seconds() + dyn*p.active(0, now, true, floor)
		for range tp {
			r.GPUs = append(r.GPUs, GPUPower{Index: len(r.GPUs), PowerW: w, EnergyJ: j})
			r.PowerW += w
			r.EnergyJ += j
		}
	}
	return r
}

// DCGM field names and units, as NVIDIA's dcgm-exporter exports them (its default counters:
// DCGM_FI_DEV_POWER_USAGE, a gauge in W; DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, a counter in
// mJ since boot, exported without a _total suffix).
const (
	dcgmPower  = "DCGM_FI_DEV_POWER_USAGE"
	dcgmEnergy = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
)

// appendDCGM appends r as dcgm-exporter writes it: one series per GPU labelled gpu, UUID,
// device, modelName and Hostname. The UUIDs are made up (GPU-…-index) and modelName says the
// GPU is simulated.
func appendDCGM(b []byte, r PowerReading) []byte {
	series := func(name, typ, help string, v func(GPUPower) float64) {
		b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" "+typ+"\n"...)
		for _, g := range r.GPUs {
			i := strconv.Itoa(g.Index)
			b = append(b, name...)
			b = append(b, `{gpu="`+i+`",UUID="GPU-00000000-0000-4000-8000-`+pad12(g.Index)+`",device="nvidia`+i+
				`",modelName=`...)
			b = appendJSONString(b, r.GPU+" (llmbench reference engine, simulated)")
			b = append(b, `,Hostname="llmbench-refengine"} `...)
			b = strconv.AppendFloat(b, v(g), 'f', 3, 64)
			b = append(b, '\n')
		}
	}
	series(dcgmPower, "gauge", "Power draw (in W).", func(g GPUPower) float64 { return g.PowerW })
	series(dcgmEnergy, "counter", "Total energy consumption since boot (in mJ).", func(g GPUPower) float64 { return g.EnergyJ * 1000 })
	return b
}

// pad12 is i as 12 decimal digits.
func pad12(i int) string {
	s := strconv.Itoa(i)
	for len(s) < 12 {
		s = "0" + s
	}
	return s
}

// simEnergy is the modelled energy of clusters cls between simulated times start and end (the
// makespan), their GPU count, the figures' source, and whether the GPU profile has power
// figures.
func simEnergy(cls []*cluster, r *resolved, start, end time.Duration) (joules float64, gpus int, source string, ok bool) {
	g := r.roof.Config().GPU
	pw, ok := perf.PowerOf(g)
	if !ok {
		return 0, 0, "", false
	}
	for _, cl := range cls {
		pr := clusterPower(cl, pw, r.TP, end, g.Name)
		joules += pr.EnergyJ - pw.IdleW*float64(len(pr.GPUs))*start.Seconds() // nothing ran before start
		gpus += len(pr.GPUs)
	}
	return joules, gpus, pw.Source, true
}
