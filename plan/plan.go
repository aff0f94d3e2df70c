// Package plan finds the cheapest deployment that serves a trace within its SLOs (`llmbench
// plan`): it searches GPU types, weight dtypes, tensor-parallel degrees and replica counts,
// simulating each candidate with refengine.SimulateCluster on the virtual clock, and picks the
// deployment with the lowest price per hour whose goodput (the fraction of all requests that
// finish and meet every SLO, as metrics counts it) reaches the target.
//
// The search is pruned in three ways, each exact under its stated assumption:
//
//   - a (GPU, dtype, TP) shape whose model does not fit in memory, or whose KV cache cannot
//     hold the trace's longest request, is ruled out without simulating;
//   - for every shape the fewest replicas that meet the target are found by stepping up one
//     replica at a time from the fewest allowed (to LinearReplicas, then doubling and
//     bisecting), assuming goodput does not fall when replicas are added: below
//     LinearReplicas the first deployment that meets the target is the shape's answer, and
//     the ones before it mostly stop early;
//   - a simulation stops as soon as so many requests have missed the SLO that the target is
//     out of reach (its goodput is then an upper bound, marked as such).
//
// Cost: a deployment's price per hour is its GPUs (TP × replicas) times the price of one
// GPU-hour of its type; its cost per million tokens is that price over the simulated run's
// makespan divided by the trace's input and output tokens. Simulations run in parallel, one per
// worker.
//
// plan does no network I/O and reads no files; the CLI maps the trace onto the engine's
// requests and records (runner/engineadapter) and prints or renders the Result. It is not a
// supported Go API (the CLI is its client).
package plan

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
)

// AutoMaxReplicas bounds the search when Options.MaxReplicas is 0.
const AutoMaxReplicas = 64

// LinearReplicas: up to this many replicas a shape is searched one replica at a time, beyond
// it by doubling and bisection.
const LinearReplicas = 8

// Options say what to search and what counts as good enough.
type Options struct {
	// Requests is the trace as the engine sees it (arrival offsets as given).
	Requests []refengine.SimRequest
	// Record fills rec with request i's record from its finished timeline (reusing rec's
	// storage), as the simulate command's records are made; the SLO is judged on it.
	Record func(i int, tl *refengine.Timeline, rec *metrics.Record)
	// Base is the engine apart from what is searched: model, KV dtype, scheduler limits,
	// profiles, seed. Its GPU, WeightDtype and TP are replaced by each candidate's.
	Base refengine.Config
	// GPUs (profile names), Dtypes (weight dtypes) and TPs span the shapes searched; an empty
	// list means Base's value.
	GPUs   []string
	Dtypes []string
	TPs    []int
	// MinReplicas and MaxReplicas bound the replicas of a deployment; MinReplicas 0 means 1,
	// MaxReplicas 0 searches upward by doubling to AutoMaxReplicas.
	MinReplicas, MaxReplicas int
	// Router routes requests between replicas (refengine.Routers; "" is round-robin).
	Router string
	// SLO holds the SLOs (SLO and ClassSLO) that a request must meet; other fields are ignored.
	SLO metrics.Options
	// Target is the goodput fraction a deployment must reach, in (0, 1].
	Target float64
	// Prices is the price of one GPU-hour by GPU profile name (as the registry resolves it);
	// every GPU searched needs one.
	Prices   map[string]float64
	Currency string
	// Workers is the number of simulations run at once (0: GOMAXPROCS).
	Workers int
	// Now is the clock for Result.Elapsed (time.Now when nil).
	Now func() time.Time

	// Objective (issue 39; energy.go) is what "best" means among the deployments that meet
	// the target: ObjectiveCost ("" too) or ObjectiveTokensPerJoule.
	Objective string
}

// Candidate is one deployment and what the search learned about it.
type Candidate struct {
	GPU      string `json:"gpu"`
	Dtype    string `json:"weight_dtype"`
	TP       int    `json:"tp"`
	Replicas int    `json:"replicas"` // 0 for a shape ruled out
	GPUs     int    `json:"gpus"`
	// PricePerHour is GPUs × the GPU-hour price.
	PricePerHour float64 `json:"price_per_hour"`
	// Goodput is the fraction of all requests that finished and met the SLO; with Stopped it
	// is an upper bound (the requests not yet finished counted as met).
	Goodput float64 `json:"goodput"`
	Meets   bool    `json:"meets_target"`
	// Fewest is true for the fewest replicas of its shape found to meet the target (the
	// shape's entry among the runner-ups).
	Fewest bool `json:"fewest_replicas,omitempty"`
	// Stopped is true when the simulation stopped once the target was out of reach.
	Stopped bool `json:"stopped_early,omitempty"`
	// CostPerMTokens is PricePerHour over the makespan per million input+output tokens (only
	// for a simulation that ran to the end).
	CostPerMTokens float64 `json:"cost_per_million_tokens,omitempty"`
	MakespanS      float64 `json:"makespan_s,omitempty"`
	// Note says why a shape was ruled out without simulating.
	Note string `json:"note,omitempty"`

	// Energy (issue 39; energy.go), for a simulation that ran to the end: the GPUs' modelled
	// energy over the makespan, their average power, and output tokens per joule.
	EnergyJ        float64 `json:"energy_j,omitempty"`
	AvgPowerW      float64 `json:"avg_power_w,omitempty"`
	TokensPerJoule float64 `json:"output_tokens_per_joule,omitempty"`
}

// Name is the deployment in one line: "4 × h100-sxm fp8 TP=2".
func (c *Candidate) Name() string {
	if c.Replicas == 0 {
		return fmt.Sprintf("%s %s TP=%d", c.GPU, c.Dtype, c.TP)
	}
	return fmt.Sprintf("%d × %s %s TP=%d", c.Replicas, c.GPU, c.Dtype, c.TP)
}

// Result is the outcome of Run.
type Result struct {
	// Best is the cheapest deployment that meets the target (nil when none does).
	Best *Candidate `json:"best"`
	// Candidates are every deployment simulated and every shape ruled out, cheapest first.
	Candidates []Candidate `json:"candidates"`
	// Searched counts the deployments decided: Simulated (StoppedEarly of them cut short)
	// plus the shapes ruled out (RuledOut).
	Searched     int `json:"searched"`
	Simulated    int `json:"simulated"`
	StoppedEarly int `json:"stopped_early"`
	RuledOut     int `json:"ruled_out"`
	// The question asked.
	Requests int               `json:"requests"`
	Tokens   int64             `json:"tokens"` // input + output of the trace
	Target   float64           `json:"target"`
	SLO      map[string]string `json:"slo"` // "" for the default, or the class name -> its SLO
	Router   string            `json:"router"`
	Currency string            `json:"currency"`
	Model    string            `json:"model"`
	ElapsedS float64           `json:"elapsed_s"`
	// Objective is what Best is best at (ObjectiveCost or ObjectiveTokensPerJoule).
	Objective string `json:"objective"`
}

type shape struct {
	gpu, dtype string
	tp         int
	price      float64 // per GPU-hour
}

// Run searches the deployments of o: it checks the options, simulates every shape's
// replica counts on o.Workers goroutines (searchAll), ranks the candidates and counts them
// (tally).
func Run(o Options) (*Result, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	shapes, err := o.shapes()
	if err != nil {
		return nil, err
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := o.checkObjective(shapes); err != nil {
		return nil, err
	}
	res := o.newResult()
	res.Objective = ObjectiveCost
	if o.Objective != "" {
		res.Objective = o.Objective
	}
	rank := lessFor(res.Objective)
	if res.Candidates, err = o.searchAll(shapes); err != nil {
		return nil, err
	}
	sort.SliceStable(res.Candidates, func(a, b int) bool { return rank(&res.Candidates[a], &res.Candidates[b]) })
	markFewest(res.Candidates)
	res.tally()
	res.Model = o.modelName(shapes)
	res.ElapsedS = now().Sub(start).Seconds()
	return res, nil
}

// validate says what is wrong with the question o asks, if anything.
func (o *Options) validate() error {
	switch {
	case len(o.Requests) == 0:
		return errors.New("plan: no requests")
	case o.Record == nil:
		return errors.New("plan: Options.Record is nil")
	case !(o.Target > 0 && o.Target <= 1):
		return fmt.Errorf("plan: target %g: want a goodput fraction in (0, 1], e.g. 0.9", o.Target)
	case o.SLO.SLO.IsZero() && len(o.SLO.ClassSLO) == 0:
		return errors.New("plan: no SLO: goodput needs at least one limit (e.g. ttft=500ms,tpot=50ms)")
	case o.MinReplicas < 0 || o.MaxReplicas < 0 || (o.MaxReplicas > 0 && o.MaxReplicas < max(o.MinReplicas, 1)):
		return fmt.Errorf("plan: replicas %d..%d: want 1 <= min <= max (max 0: search upward)", o.MinReplicas, o.MaxReplicas)
	}
	return nil
}

// newResult is a Result that states the question o asks, with no candidates yet.
func (o *Options) newResult() *Result {
	res := &Result{Requests: len(o.Requests), Target: o.Target, Router: o.Router, Currency: o.Currency,
		SLO: map[string]string{"": o.SLO.SLO.String()}}
	if res.Router == "" {
		res.Router = refengine.RouterRoundRobin
	}
	for c, s := range o.SLO.ClassSLO {
		res.SLO[c] = s.String()
	}
	for _, q := range o.Requests {
		res.Tokens += int64(q.PromptTokens + q.MaxTokens)
	}
	return res
}

// searchAll searches every shape on o.Workers goroutines (0: GOMAXPROCS) and returns the
// candidates in the order they finished; the shapes' errors, joined, when any failed.
func (o *Options) searchAll(shapes []shape) ([]Candidate, error) {
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		errs  []error
		cands []Candidate
		work  = make(chan shape)
	)
	for w := 0; w < min(workers, len(shapes)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sh := range work {
				got, err := o.searchShape(sh)
				mu.Lock()
				cands = append(cands, got...)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	for _, sh := range shapes {
		work <- sh
	}
	close(work)
	wg.Wait()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return cands, nil
}

// markFewest sets Fewest on each shape's candidate with the fewest replicas that meets the
// target.
func markFewest(cands []Candidate) {
	fewest := map[string]*Candidate{}
	for i := range cands {
		c := &cands[i]
		key := fmt.Sprint(c.GPU, c.Dtype, c.TP)
		if f := fewest[key]; c.Meets && (f == nil || c.Replicas < f.Replicas) {
			fewest[key] = c
		}
	}
	for _, c := range fewest {
		c.Fewest = true
	}
}

// tally counts the ranked candidates (simulated, stopped early, ruled out) and sets Best to
// the first that meets the target.
func (res *Result) tally() {
	for i := range res.Candidates {
		c := &res.Candidates[i]
		if c.Replicas == 0 {
			res.RuledOut++
			continue
		}
		res.Simulated++
		if c.Stopped {
			res.StoppedEarly++
		}
		if c.Meets && res.Best == nil {
			res.Best = c
		}
	}
	res.Searched = res.Simulated + res.RuledOut
}

// modelName is the model's name as the engine reports it, from the first shape whose
// configuration it accepts ("" when none does).
func (o *Options) modelName(shapes []shape) string {
	for _, sh := range shapes {
		if r, err := refengine.SimulateCluster(nil, o.config(sh), refengine.ClusterOptions{}); err == nil {
			return r.Info.Model
		}
	}
	return ""
}

// less orders candidates cheapest first; at one price the higher goodput, then fewer GPUs.
func less(a, b *Candidate) bool {
	if (a.Replicas == 0) != (b.Replicas == 0) {
		return b.Replicas == 0 // shapes ruled out last
	}
	if a.PricePerHour != b.PricePerHour {
		return a.PricePerHour < b.PricePerHour
	}
	if a.Goodput != b.Goodput {
		return a.Goodput > b.Goodput
	}
	if a.GPUs != b.GPUs {
		return a.GPUs < b.GPUs
	}
	return a.Name() < b.Name()
}

// shapes lists the (GPU, dtype, TP) combinations with their prices, GPU names resolved.
func (o *Options) shapes() ([]shape, error) {
	reg := o.Base.Profiles
	if reg == nil {
		reg = perf.NewRegistry()
	}
	gpus := o.GPUs
	if len(gpus) == 0 {
		gpus = []string{o.Base.GPU}
		if gpus[0] == "" {
			gpus[0] = "h100"
		}
	}
	dtypes := o.Dtypes
	if len(dtypes) == 0 {
		dtypes = []string{o.Base.WeightDtype}
		if dtypes[0] == "" {
			dtypes[0] = "bf16"
		}
	}
	tps := o.TPs
	if len(tps) == 0 {
		tps = []int{max(o.Base.TP, 1)}
	}
	var out []shape
	seen := map[string]bool{}
	for _, g := range gpus {
		prof, err := reg.GPU(g)
		if err != nil {
			return nil, fmt.Errorf("plan: gpu %q: %w", g, err)
		}
		price, ok := o.Prices[prof.Name]
		if !ok || !(price > 0) || math.IsInf(price, 0) {
			return nil, fmt.Errorf("plan: no GPU-hour price for %s (give %s=PRICE)", prof.Name, prof.Name)
		}
		for _, d := range dtypes {
			for _, tp := range tps {
				if tp < 1 {
					return nil, fmt.Errorf("plan: tp %d: want 1 or more", tp)
				}
				key := fmt.Sprint(prof.Name, d, tp)
				if seen[key] {
					continue
				}
				seen[key] = true
				out = append(out, shape{gpu: prof.Name, dtype: d, tp: tp, price: price})
			}
		}
	}
	return out, nil
}

func (o *Options) config(sh shape) refengine.Config {
	cfg := o.Base
	cfg.GPU, cfg.WeightDtype, cfg.TP = sh.gpu, sh.dtype, sh.tp
	return cfg
}

// searchShape finds the fewest replicas of sh that meet the target, returning every
// deployment it simulated (or one ruled-out entry).
func (o *Options) searchShape(sh shape) ([]Candidate, error) {
	base := Candidate{GPU: sh.gpu, Dtype: sh.dtype, TP: sh.tp}
	if _, err := refengine.SimulateCluster(nil, o.config(sh), refengine.ClusterOptions{}); err != nil {
		if errors.Is(err, perf.ErrWeightsDoNotFit) || errors.Is(err, perf.ErrNoKVCache) || strings.Contains(err.Error(), "tensor-parallel") ||
			strings.Contains(err.Error(), "tensor parallelism") {
			base.Note = "ruled out: " + err.Error()
			return []Candidate{base}, nil
		}
		return nil, fmt.Errorf("plan: %s: %w", base.Name(), err)
	}
	lo := max(o.MinReplicas, 1) - 1 // replicas known (or assumed) to miss
	var out []Candidate
	probe := func(r int) (Candidate, error) {
		c, err := o.simulate(sh, r)
		if err != nil {
			return c, err
		}
		out = append(out, c)
		return c, nil
	}
	// Step up one replica at a time from the fewest allowed to LinearReplicas, then double,
	// until a deployment meets the target; then bisect what doubling skipped. Stepping keeps
	// the full simulations few: a deployment far from the target stops early, and the first
	// one that meets it below LinearReplicas is the fewest, with no dearer one simulated to
	// the end before it.
	top := o.MaxReplicas
	if top == 0 {
		top = AutoMaxReplicas
	}
	hi := top + 1 // replicas known to meet (top+1: none in range yet)
	for r := lo + 1; ; {
		c, err := probe(r)
		if err != nil {
			return o.ruledOut(base, out, err)
		}
		if c.Meets {
			hi = r
			break
		}
		lo = r
		if r == top {
			break
		}
		if r < LinearReplicas {
			r++
		} else {
			r = min(2*r, top)
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		c, err := probe(mid)
		if err != nil {
			return o.ruledOut(base, out, err)
		}
		if c.Meets {
			hi = mid
		} else {
			lo = mid
		}
	}
	return out, nil
}

// ruledOut turns a simulation error that no replica count can mend (a request longer than
// the KV cache holds, a stalled engine) into a ruled-out shape.
func (o *Options) ruledOut(base Candidate, done []Candidate, err error) ([]Candidate, error) {
	if errors.Is(err, refengine.ErrTooLong) || errors.Is(err, refengine.ErrStalled) {
		base.Note = "ruled out: " + err.Error()
		return append(done, base), nil
	}
	return nil, err
}

// simulate runs the trace on r replicas of sh, stopping once the target is out of reach.
func (o *Options) simulate(sh shape, r int) (Candidate, error) {
	c := Candidate{GPU: sh.gpu, Dtype: sh.dtype, TP: sh.tp, Replicas: r, GPUs: r * sh.tp}
	c.PricePerHour = float64(c.GPUs) * sh.price
	n := len(o.Requests)
	need := int(math.Ceil(o.Target*float64(n) - 1e-9))
	chk := metrics.NewSLOCheck(o.SLO)
	var rec metrics.Record
	met, missed := 0, 0
	res, err := refengine.SimulateCluster(o.Requests, o.config(sh), refengine.ClusterOptions{Replicas: r, Router: o.Router,
		OnFinish: func(i int, tl *refengine.Timeline) bool {
			o.Record(i, tl, &rec)
			tl.Emissions = nil
			if chk.Meets(&rec) {
				met++
			} else {
				missed++
			}
			return n-missed >= need
		}})
	if err != nil {
		return c, fmt.Errorf("plan: %s: %w", c.Name(), err)
	}
	c.Stopped = res.Stopped
	if res.Stopped {
		c.Goodput = float64(n-missed) / float64(n)
	} else {
		c.Goodput = float64(met) / float64(n)
		c.MakespanS = res.Stats.Makespan.Seconds()
		if tok := res.Stats.PromptTokens + res.Stats.GenerationTokens; tok > 0 {
			c.CostPerMTokens = c.PricePerHour * c.MakespanS / 3600 / (float64(tok) / 1e6)
		}
		c.setEnergy(res.Stats)
	}
	c.Meets = !res.Stopped && met >= need
	return c, nil
}
