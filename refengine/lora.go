package refengine

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// LoRA adapters (issue 38). The engine serves named low-rank adapters on its one base model,
// as vLLM does with --enable-lora --lora-modules NAME=PATH --max-loras N:
//
//   - An adapter of rank r holds 2 × layers × hidden × r × LoRAMatrices parameters (an A of
//     hidden × r and a B of r × hidden for each adapted matrix of each layer: q, k, v, o, gate,
//     up and down, each approximated as hidden wide), LoRADtypeBytes bytes each. For Llama
//     3.1 8B (32 layers, hidden 4096) at rank 16 that is 2 × 32 × 4096 × 16 × 7 × 2 B =
//     58.7 MB.
//   - The GPU holds MaxLoRAs adapters at once (slots). A request whose adapter is not in a
//     slot is admitted only when a slot is free or holds an adapter no running request uses
//     (the least recently used such one is evicted); otherwise it waits and later requests
//     are considered, as vLLM's scheduler skips requests past its LoRA limit. Loading an
//     adapter copies its bytes over the host link: bytes / (TP × the GPU profile's HostBW,
//     perf.GPU.HostBandwidth), added to the step that admits it.
//   - Each step adds the low-rank matmuls of the adapted tokens, priced on the roofline: 2
//     FLOPs per adapter parameter per token, against reading each distinct adapter's weights
//     once, whichever takes longer (they run as kernels of their own, after the base
//     model's, so the time adds).
//
// The base model needs no slot; its name and the adapters' are listed in /v1/models, and any
// other name is refused with vLLM's 404 (loraNotFound).

// LoRA is one adapter the engine serves (Config.LoRAs).
type LoRA struct {
	// Name is the model name requests send to use the adapter.
	Name string
	// Rank is the adapter's rank r (0 means DefaultLoRARank).
	Rank int
}

// Adapter pricing constants (the package comment above gives the formulas).
const (
	// DefaultLoRARank is the rank of an adapter given without one (vLLM's max_lora_rank
	// default).
	DefaultLoRARank = 16
	// MaxLoRARank bounds an adapter's rank.
	MaxLoRARank = 1024
	// LoRAMatrices is the number of adapted matrices per layer (q, k, v, o, gate, up, down).
	LoRAMatrices = 7
	// LoRADtypeBytes is the size of one adapter parameter (bf16, whatever the base's dtype).
	LoRADtypeBytes = 2
	// MaxLoRAs bounds Config.LoRAs and Config.MaxLoRAs.
	MaxLoRAs = 4096
)

// ParseLoRA parses NAME or NAME:RANK (the --lora flag).
func ParseLoRA(s string) (LoRA, error) {
	name, rank, hasRank := strings.Cut(s, ":")
	l := LoRA{Name: name}
	if hasRank {
		var n int
		if _, err := fmt.Sscanf(rank, "%d", &n); err != nil || fmt.Sprint(n) != rank {
			return LoRA{}, fmt.Errorf("--lora %q: the rank after ':' must be an integer from 1 to %d", s, MaxLoRARank)
		}
		l.Rank = n
		if n < 1 {
			return LoRA{}, fmt.Errorf("--lora %q: the rank after ':' must be an integer from 1 to %d", s, MaxLoRARank)
		}
	}
	if err := l.check(); err != nil {
		return LoRA{}, fmt.Errorf("--lora %q: %w", s, err)
	}
	return l, nil
}

// check validates one adapter (Rank 0 is the default).
func (l LoRA) check() error {
	switch {
	case l.Name == "" || strings.TrimSpace(l.Name) != l.Name || len(l.Name) > 256:
		return fmt.Errorf("the adapter name must be a non-empty name of at most 256 bytes without surrounding spaces")
	case strings.ContainsFunc(l.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }) || !utf8.ValidString(l.Name):
		return fmt.Errorf("the adapter name must be UTF-8 without control characters")
	case l.Rank < 0 || l.Rank > MaxLoRARank:
		return fmt.Errorf("rank %d must be from 1 to %d", l.Rank, MaxLoRARank)
	}
	return nil
}

// loraAdapter is a resolved adapter: its size, load time and per-token work.
type loraAdapter struct {
	name   string
	rank   int
	bytes  float64       // the adapter's weights (all GPUs together)
	load   time.Duration // copying them into a slot
	flops  float64       // per adapted token, all GPUs together
	params float64
}

// loraModel is the resolved adapter setup shared by every pool: the adapters (index i is
// seq.lora i+1; 0 is the base model), the slots, and the roofline's rates.
type loraModel struct {
	adapters   []loraAdapter
	byName     map[string]int // name -> seq.lora
	slots      int
	secPerFLOP float64 // 1 / (TP × bf16 FLOP/s × FLOPEff)
	secPerByte float64 // 1 / (TP × HBM bandwidth × BWEff)
}

// resolveLoRA validates the adapters and builds r.lora (nil without adapters).
func (r *resolved) resolveLoRA() error {
	if len(r.LoRAs) == 0 {
		if r.MaxLoRAs != 0 {
			return fmt.Errorf("refengine: MaxLoRAs %d needs adapters (Config.LoRAs, --lora NAME[:RANK])", r.MaxLoRAs)
		}
		return nil
	}
	if len(r.LoRAs) > MaxLoRAs || r.MaxLoRAs < 0 || r.MaxLoRAs > MaxLoRAs {
		return fmt.Errorf("refengine: %d adapters on %d slots: both must be at most %d (and slots >= 1)", len(r.LoRAs), r.MaxLoRAs, MaxLoRAs)
	}
	pc := r.roof.Config()
	tp := float64(r.TP)
	m := &loraModel{byName: map[string]int{}, slots: max(1, r.MaxLoRAs),
		secPerFLOP: 1 / (tp * pc.GPU.BF16FLOPS * pc.FLOPEff), secPerByte: 1 / (tp * pc.GPU.MemBW * pc.BWEff)}
	for i, l := range r.LoRAs {
		if err := l.check(); err != nil {
			return fmt.Errorf("refengine: LoRAs[%d] %q: %w", i, l.Name, err)
		}
		if l.Name == r.ServedModelName || m.byName[l.Name] != 0 {
			return fmt.Errorf("refengine: LoRAs[%d]: the name %q is taken (by the base model or another adapter)", i, l.Name)
		}
		rank := l.Rank
		if rank == 0 {
			rank = DefaultLoRARank
		}
		params := 2 * float64(r.model.Layers) * float64(r.model.Hidden) * float64(rank) * LoRAMatrices
		a := loraAdapter{name: l.Name, rank: rank, params: params, bytes: params * LoRADtypeBytes, flops: 2 * params}
		a.load = time.Duration(a.bytes / (tp * pc.GPU.HostBandwidth()) * 1e9)
		m.adapters = append(m.adapters, a)
		m.byName[l.Name] = len(m.adapters)
	}
	r.lora = m
	return nil
}

// lookup is the seq.lora of a model name: 0 for the base (or ""), i+1 for adapter i; ok is
// false for a name the engine does not serve.
func (m *loraModel) lookup(name, base string) (int, bool) {
	if name == "" || name == base {
		return 0, true
	}
	if m == nil {
		return 0, false
	}
	id, ok := m.byName[name]
	return id, ok
}

// names lists the adapters in configuration order.
func (m *loraModel) names() []string {
	if m == nil {
		return nil
	}
	out := make([]string, len(m.adapters))
	for i, a := range m.adapters {
		out[i] = a.name
	}
	return out
}

// loraNotFound is vLLM's answer to an unknown model name:
// {"error":{"message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404}}.
func loraNotFound(name string) *apiError {
	return &apiError{status: 404, typ: "NotFoundError", param: "model", numCode: 404,
		message: fmt.Sprintf("The model `%s` does not exist.", clipText(name, 200))}
}

// loraSlots is one pool's adapter slots and the current step's adapter work.
type loraSlots struct {
	m      *loraModel
	loaded []int   // seq.lora of the adapters in slots, least recently used first
	stamp  []int64 // per adapter: the step its weights were last counted in
	step   int64
	flops  float64
	bytes  float64
	load   time.Duration

	loads, evictions int64
	loadTime         time.Duration
}

func newLoRASlots(m *loraModel) *loraSlots {
	if m == nil {
		return nil
	}
	return &loraSlots{m: m, stamp: make([]int64, len(m.adapters)+1)}
}

// reset starts a step.
func (l *loraSlots) reset() {
	l.step++
	l.flops, l.bytes, l.load = 0, 0, 0
}

// touch marks adapter id most recently used; it reports false when it is in no slot.
func (l *loraSlots) touch(id int) bool {
	for i, x := range l.loaded {
		if x == id {
			copy(l.loaded[i:], l.loaded[i+1:])
			l.loaded[len(l.loaded)-1] = id
			return true
		}
	}
	return false
}

// admit makes sure adapter id is in a slot for a request about to join running, loading it
// (and evicting the least recently used adapter no running request uses) when it is not; it
// reports false when every slot holds an adapter in use.
func (l *loraSlots) admit(id int, running []*seq) bool {
	if l.touch(id) {
		return true
	}
	if len(l.loaded) >= l.m.slots {
		victim := -1
		for i, x := range l.loaded {
			if !loraInUse(x, running) {
				victim = i
				break
			}
		}
		if victim < 0 {
			return false
		}
		l.loaded = append(l.loaded[:victim], l.loaded[victim+1:]...)
		l.evictions++
	}
	l.loaded = append(l.loaded, id)
	a := &l.m.adapters[id-1]
	l.load += a.load
	l.loadTime += a.load
	l.loads++
	return true
}

func loraInUse(id int, running []*seq) bool {
	for _, s := range running {
		if s.lora == id {
			return true
		}
	}
	return false
}

// price adds n adapted tokens of adapter id to the step.
func (l *loraSlots) price(id, n int) {
	a := &l.m.adapters[id-1]
	l.flops += float64(n) * a.flops
	if l.stamp[id] != l.step {
		l.stamp[id] = l.step
		l.bytes += a.bytes
	}
	l.touch(id)
}

// time is the step's adapter cost: the loads, then the low-rank matmuls.
func (l *loraSlots) time() time.Duration {
	mm := max(l.flops*l.m.secPerFLOP, l.bytes*l.m.secPerByte)
	return l.load + time.Duration(mm*1e9)
}

// loadedNames lists the adapters in slots, least recently used first.
func (l *loraSlots) loadedNames() []string {
	out := make([]string, len(l.loaded))
	for i, id := range l.loaded {
		out[i] = l.m.adapters[id-1].name
	}
	return out
}

// admitLoRA makes s's adapter resident for its admission, counting the load; false when no
// slot can take it this step (s waits).
func (c *core) admitLoRA(s *seq) bool {
	if c.lora == nil {
		return false
	}
	loads, evictions, t := c.lora.loads, c.lora.evictions, c.lora.loadTime
	if !c.lora.admit(s.lora, c.running) {
		return false
	}
	c.stats.LoRALoads += c.lora.loads - loads
	c.stats.LoRAEvictions += c.lora.evictions - evictions
	c.stats.LoRALoadTime += c.lora.loadTime - t
	return true
}

// appendAdapterModels appends the adapters' /v1/models entries (each after a comma), shaped
// as vLLM lists LoRA modules: root the adapter, parent the base model.
func (e *Engine) appendAdapterModels(b []byte) []byte {
	for _, name := range e.cfg.lora.names() {
		b = append(b, `,{"id":`...)
		b = appendJSONString(b, name)
		b = append(b, `,"object":"model","created":`...)
		b = fmt.Appendf(b, "%d", e.cfg.Now().Unix())
		b = append(b, `,"owned_by":"llmbench","root":`...)
		b = appendJSONString(b, name)
		b = append(b, `,"parent":`...)
		b = appendJSONString(b, e.cfg.ServedModelName)
		b = fmt.Appendf(b, `,"max_model_len":%d}`, e.cfg.maxModelLen)
	}
	return b
}

// loraMetrics writes the adapter series of /metrics (with adapters only): vLLM's
// lora_requests_info (the adapters of running and waiting requests, and the slots, as
// labels) and the engine's loads, evictions and load time. The caller holds e.mu.
func (e *Engine) loraMetrics(p *promWriter, st coreStats) {
	m := e.cfg.lora
	if m == nil {
		return
	}
	running, waiting := map[int]bool{}, map[int]bool{}
	for _, pl := range e.cl.pools {
		for _, s := range pl.c.running {
			running[s.lora] = true
		}
		for i := 0; i < pl.c.waiting.len(); i++ {
			waiting[pl.c.waiting.at(i).lora] = true
		}
	}
	for _, s := range e.incoming {
		waiting[s.lora] = true
	}
	list := func(set map[int]bool) string {
		var names []string
		for i, a := range m.adapters {
			if set[i+1] {
				names = append(names, a.name)
			}
		}
		return string(appendJSONString(nil, strings.Join(names, ",")))
	}
	p.header("vllm:lora_requests_info", "gauge", "Running stats on lora requests.")
	p.value("vllm:lora_requests_info", fmt.Sprintf(`max_lora="%d",running_lora_adapters=%s,waiting_lora_adapters=%s`,
		m.slots, list(running), list(waiting)), 1)
	p.counter("llmbench:lora_loads", "LoRA adapters copied into a GPU slot.", float64(st.LoRALoads))
	p.counter("llmbench:lora_evictions", "LoRA adapters evicted from a GPU slot to make room.", float64(st.LoRAEvictions))
	p.counter("llmbench:lora_load_seconds", "Simulated time spent copying LoRA adapters into slots.", st.LoRALoadTime.Seconds())
}

// LoRAStats are the engine's adapter counters (Engine.LoRAStats): loads into a slot,
// evictions, the simulated time the loads took, and the adapters in slots now (least
// recently used first, all pools).
type LoRAStats struct {
	Loads, Evictions int64
	LoadTime         time.Duration
	Loaded           []string
}

// LoRAStats returns the adapter counters so far (zero without adapters).
func (e *Engine) LoRAStats() LoRAStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.cl.stats()
	out := LoRAStats{Loads: st.LoRALoads, Evictions: st.LoRAEvictions, LoadTime: st.LoRALoadTime}
	for _, pl := range e.cl.pools {
		if pl.c.lora != nil {
			out.Loaded = append(out.Loaded, pl.c.lora.loadedNames()...)
		}
	}
	return out
}

// info is Info's adapter fields: "NAME:RANK,..." and the slots ("" and 0 without adapters).
func (m *loraModel) info() (string, int) {
	if m == nil {
		return "", 0
	}
	parts := make([]string, len(m.adapters))
	for i, a := range m.adapters {
		parts[i] = fmt.Sprintf("%s:%d", a.name, a.rank)
	}
	return strings.Join(parts, ","), m.slots
}

// ServedModels lists the model names an engine of c answers to: the served model name, then
// the adapters' (issue 38). It does not validate c (New and Simulate do).
func (c Config) ServedModels() []string {
	out := []string{c.withDefaults().ServedModelName}
	for _, l := range c.LoRAs {
		out = append(out, l.Name)
	}
	return out
}
