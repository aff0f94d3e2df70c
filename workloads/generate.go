package workloads

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/llmbench/llmbench/traces"
)

// compiledClass is a ClassSpec ready to draw from.
type compiledClass struct {
	spec                   *ClassSpec
	input, output          *sampler
	turns, newInput, think *sampler
	groups                 [][]int64 // prefix block ids per group
	groupCDF               []float64
	prefixTokens           int
}

// Generate produces the trace a spec describes: requests sorted by arrival (absolute offsets
// from the trace start), ids r1, r2, ... in arrival order, each tagged with its class. It is a
// pure function of spec (including Seed): the same spec always gives the same trace.
//
// Randomness is split into independent streams (arrivals; then one stream per arrival for its
// class, lengths, prefix group and session), so changing a class's lengths does not move any
// arrival and changing the rate does not change the lengths drawn for the first arrivals.
func Generate(spec Spec) ([]traces.Request, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	B := spec.BlockTokens
	if B == 0 {
		B = traces.DefaultBlockTokens
	}
	D := spec.Duration()
	times, err := Arrivals(spec.Arrival, D, spec.Seed)
	if err != nil {
		return nil, err
	}
	var nextID int64 = 1
	classes := make([]compiledClass, len(spec.Classes))
	classCDF := make([]float64, len(spec.Classes))
	var wsum float64
	for i := range spec.Classes {
		c := &spec.Classes[i]
		cc := compiledClass{spec: c}
		var err error
		if cc.input, err = c.Input.compile(); err != nil {
			return nil, fmt.Errorf("class %q input: %w", c.Name, err)
		}
		if cc.output, err = c.Output.compile(); err != nil {
			return nil, fmt.Errorf("class %q output: %w", c.Name, err)
		}
		if s := c.Session; s != nil {
			if cc.turns, err = s.Turns.compile(); err != nil {
				return nil, fmt.Errorf("class %q turns: %w", c.Name, err)
			}
			if cc.newInput, err = s.NewInput.compile(); err != nil {
				return nil, fmt.Errorf("class %q new_input: %w", c.Name, err)
			}
			if cc.think, err = s.ThinkMS.compile(); err != nil {
				return nil, fmt.Errorf("class %q think_ms: %w", c.Name, err)
			}
		}
		if p := c.Prefix; p != nil {
			blocks := (p.Tokens + B - 1) / B
			cc.prefixTokens = blocks * B
			cc.groups = make([][]int64, p.Groups)
			cc.groupCDF = make([]float64, p.Groups)
			var sum float64
			for g := range cc.groups {
				ids := make([]int64, blocks)
				for k := range ids {
					ids[k] = nextID
					nextID++
				}
				cc.groups[g] = ids
				sum += math.Pow(float64(g+1), -p.Zipf)
				cc.groupCDF[g] = sum
			}
			for g := range cc.groupCDF {
				cc.groupCDF[g] /= sum
			}
		}
		classes[i] = cc
		wsum += c.weight()
		classCDF[i] = wsum
	}
	for i := range classCDF {
		classCDF[i] /= wsum
	}

	var reqs []traces.Request
	sessions := 0
	idBudget := maxHashIDs
	for i, at := range times {
		r := newRNG(spec.Seed, 1<<40+uint64(i))
		cc := &classes[pick(classCDF, r.float())]
		c := cc.spec
		z1, z2 := r.norm(), r.norm()
		rho := c.Correlation
		in := max(1, cc.input.at(z1))
		out := max(1, cc.output.at(rho*z1+math.Sqrt(1-rho*rho)*z2))
		var ids []int64
		prefix := 0
		usePrefix, group := r.float(), r.float()
		if p := c.Prefix; p != nil && (p.Fraction == 0 || usePrefix < p.Fraction) {
			ids = append(ids, cc.groups[pick(cc.groupCDF, group)]...)
			prefix = cc.prefixTokens
		}
		if prefix+in > MaxPromptTokens {
			return nil, fmt.Errorf("class %q: a prompt of %d tokens exceeds the limit of %d; lower the input distribution's max", c.Name, prefix+in, MaxPromptTokens)
		}
		if c.Session == nil {
			reqs = append(reqs, traces.Request{Arrival: at, InputTokens: prefix + in, OutputTokens: out,
				Class: c.Name, HashIDs: ids, Temperature: c.Temperature})
			continue
		}
		sessions++
		s := c.Session
		tpot := s.TPOTMS
		if tpot == 0 {
			tpot = 20
		}
		session := fmt.Sprintf("s%d", sessions)
		turns := min(MaxTurns, max(1, cc.turns.at(r.norm())))
		total := prefix + in
		var think time.Duration
		for k := 1; k <= turns; k++ {
			if k > 1 {
				think = time.Duration(cc.think.at(r.norm())) * time.Millisecond
				gap := time.Duration(math.Round(float64(out)*tpot*1e3)) * time.Microsecond
				at += gap + think
				total += out + max(1, cc.newInput.at(r.norm()))
				out = max(1, cc.output.at(r.norm()))
			}
			if at >= D || (s.MaxInput > 0 && total > s.MaxInput) || total > MaxPromptTokens {
				break
			}
			for len(ids)*B < total {
				ids = append(ids, nextID)
				nextID++
			}
			idBudget -= len(ids)
			if idBudget < 0 {
				return nil, fmt.Errorf("the spec's sessions need more than %d hash ids in all; lower the turns, the context or raise block_tokens", maxHashIDs)
			}
			req := traces.Request{Arrival: at, InputTokens: total, OutputTokens: out, Class: c.Name,
				Session: session, Turn: k, HashIDs: append([]int64(nil), ids...), Temperature: c.Temperature}
			if k > 1 {
				req.Think = think
			}
			reqs = append(reqs, req)
		}
		if len(reqs) > maxArrivals {
			return nil, fmt.Errorf("the spec produces more than %d requests; lower the rate, the duration or the turns per session", maxArrivals)
		}
	}
	traces.SortByArrival(reqs)
	if spec.MaxRequests > 0 && len(reqs) > spec.MaxRequests {
		reqs = reqs[:spec.MaxRequests]
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("the spec produced no requests in %v (raise the rate or the duration)", D)
	}
	for i := range reqs {
		reqs[i].ID = fmt.Sprintf("r%d", i+1)
	}
	return reqs, nil
}

// Limits that keep a spec from asking for unbounded memory.
const (
	// MaxPromptTokens is the largest prompt Generate writes; sessions end before exceeding it.
	MaxPromptTokens = 1 << 24
	// MaxTurns caps the turns of one session.
	MaxTurns = 1000
	// maxHashIDs bounds the hash ids of all session turns together.
	maxHashIDs = 1 << 25
)

// pick returns the index of the first cumulative weight >= u.
func pick(cdf []float64, u float64) int {
	return min(sort.SearchFloat64s(cdf, u), len(cdf)-1)
}
