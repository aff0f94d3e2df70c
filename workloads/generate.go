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
	tool, fanOut           *sampler  // agentic sessions; nil when unset
	groups                 [][]int64 // prefix block ids per group
	groupCDF               []float64
	prefixTokens           int
	imageCount             *sampler  // images per request (ClassSpec.Images)
	modelCDF               []float64 // ClassSpec.Models, cumulative (models.go); nil: none
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
	g, err := compileSpec(&spec)
	if err != nil {
		return nil, err
	}
	times, err := Arrivals(spec.Arrival, g.duration, spec.Seed)
	if err != nil {
		return nil, err
	}
	for i, at := range times {
		from := len(g.reqs)
		cc, err := g.draw(newRNG(spec.Seed, 1<<40+uint64(i)), at)
		if err != nil {
			return nil, err
		}
		g.assignModel(cc, i, from, spec.Seed)
		if len(g.reqs) > maxArrivals {
			return nil, fmt.Errorf("the spec produces more than %d requests; lower the rate, the duration or the turns per session", maxArrivals)
		}
	}
	reqs := g.reqs
	traces.SortByArrival(reqs)
	if spec.MaxRequests > 0 && len(reqs) > spec.MaxRequests {
		reqs = reqs[:spec.MaxRequests]
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("the spec produced no requests in %v (raise the rate or the duration)", g.duration)
	}
	for i := range reqs {
		reqs[i].ID = fmt.Sprintf("r%d", i+1)
	}
	if err := applyCancel(spec.Cancel, reqs, spec.Seed); err != nil { // cancel.go
		return nil, err
	}
	return reqs, nil
}

// generator is a compiled spec and the state of drawing from it.
type generator struct {
	classes     []compiledClass
	classCDF    []float64 // cumulative class weights, normalized
	blockTokens int       // tokens per hash block
	duration    time.Duration

	nextID   int64 // the next unused hash block id
	idBudget int   // hash ids session turns may still use
	sessions int   // sessions started
	reqs     []traces.Request
}

// compileSpec compiles every class of a validated spec: its samplers and its prefix groups,
// whose hash block ids are numbered from 1 in class order.
func compileSpec(spec *Spec) (*generator, error) {
	g := &generator{blockTokens: spec.BlockTokens, duration: spec.Duration(), nextID: 1, idBudget: maxHashIDs}
	if g.blockTokens == 0 {
		g.blockTokens = traces.DefaultBlockTokens
	}
	g.classes = make([]compiledClass, len(spec.Classes))
	g.classCDF = make([]float64, len(spec.Classes))
	var wsum float64
	for i := range spec.Classes {
		c := &spec.Classes[i]
		if err := g.compileClass(&g.classes[i], c); err != nil {
			return nil, err
		}
		wsum += c.weight()
		g.classCDF[i] = wsum
	}
	for i := range g.classCDF {
		g.classCDF[i] /= wsum
	}
	return g, nil
}

func (g *generator) compileClass(cc *compiledClass, c *ClassSpec) error {
	cc.spec = c
	cc.modelCDF = modelCDF(c.Models)
	var err error
	if cc.input, err = c.Input.compile(); err != nil {
		return fmt.Errorf("class %q input: %w", c.Name, err)
	}
	if cc.output, err = c.Output.compile(); err != nil {
		return fmt.Errorf("class %q output: %w", c.Name, err)
	}
	if s := c.Session; s != nil {
		if cc.turns, err = s.Turns.compile(); err != nil {
			return fmt.Errorf("class %q turns: %w", c.Name, err)
		}
		if cc.newInput, err = s.NewInput.compile(); err != nil {
			return fmt.Errorf("class %q new_input: %w", c.Name, err)
		}
		if cc.think, err = s.ThinkMS.compile(); err != nil {
			return fmt.Errorf("class %q think_ms: %w", c.Name, err)
		}
		if !s.ToolMS.IsZero() {
			if cc.tool, err = s.ToolMS.compile(); err != nil {
				return fmt.Errorf("class %q tool_ms: %w", c.Name, err)
			}
		}
		if !s.FanOut.IsZero() {
			if cc.fanOut, err = s.FanOut.compile(); err != nil {
				return fmt.Errorf("class %q fan_out: %w", c.Name, err)
			}
		}
	}
	if im := c.Images; im != nil {
		if cc.imageCount, err = im.Count.compile(); err != nil {
			return fmt.Errorf("class %q images count: %w", c.Name, err)
		}
	}
	if p := c.Prefix; p != nil {
		blocks := (p.Tokens + g.blockTokens - 1) / g.blockTokens
		cc.prefixTokens = blocks * g.blockTokens
		cc.groups = make([][]int64, p.Groups)
		cc.groupCDF = make([]float64, p.Groups)
		var sum float64
		for k := range cc.groups {
			ids := make([]int64, blocks)
			for j := range ids {
				ids[j] = g.nextID
				g.nextID++
			}
			cc.groups[k] = ids
			sum += math.Pow(float64(k+1), -p.Zipf)
			cc.groupCDF[k] = sum
		}
		for k := range cc.groupCDF {
			cc.groupCDF[k] /= sum
		}
	}
	return nil
}

// draw adds the request (or the session's turns) of the arrival at at, drawing from r in a
// fixed order: class, two normals for the correlated lengths, prefix use, prefix group, then
// the session's draws. It returns the class drawn.
func (g *generator) draw(r *rng, at time.Duration) (*compiledClass, error) {
	cc := &g.classes[pick(g.classCDF, r.float())]
	return cc, g.drawClass(r, cc, at)
}

// drawClass is draw for the class cc drawn.
func (g *generator) drawClass(r *rng, cc *compiledClass, at time.Duration) error {
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
		return fmt.Errorf("class %q: a prompt of %d tokens exceeds the limit of %d; lower the input distribution's max", c.Name, prefix+in, MaxPromptTokens)
	}
	if c.Session == nil {
		g.reqs = append(g.reqs, traces.Request{Arrival: at, InputTokens: prefix + in, OutputTokens: out,
			Class: c.Name, HashIDs: ids, Temperature: c.Temperature})
		if c.Images != nil {
			g.reqs[len(g.reqs)-1].Messages = cc.drawImages(r)
		}
		return nil
	}
	return g.drawSession(r, cc, at, prefix+in, out, ids)
}

// drawSession adds the turns of one session whose first turn arrives at at with a prompt of
// total tokens (hash ids ids so far) and out output tokens. Each later turn arrives after the
// previous answer (out tokens at the session's TPOT) and a think time, with the previous
// answer and new input appended to its prompt; the session ends at the trace's duration, the
// class's max_input or MaxPromptTokens.
func (g *generator) drawSession(r *rng, cc *compiledClass, at time.Duration, total, out int, ids []int64) error {
	c, s := cc.spec, cc.spec.Session
	tpot := s.TPOTMS
	if tpot == 0 {
		tpot = 20
	}
	g.sessions++
	session := fmt.Sprintf("s%d", g.sessions)
	turns := min(MaxTurns, max(1, cc.turns.at(r.norm())))
	answer := func(out int) time.Duration {
		return time.Duration(math.Round(float64(out)*tpot*1e3)) * time.Microsecond
	}
	toolDelay := func() time.Duration {
		if cc.tool == nil {
			return 0
		}
		return time.Duration(cc.tool.at(r.norm())) * time.Millisecond
	}
	// extend grows ids to cover total tokens with fresh blocks, within the hash id budget.
	extend := func(ids []int64, total int) ([]int64, error) {
		ids = append([]int64(nil), ids...)
		for len(ids)*g.blockTokens < total {
			ids = append(ids, g.nextID)
			g.nextID++
		}
		g.idBudget -= len(ids)
		if g.idBudget < 0 {
			return nil, fmt.Errorf("the spec's sessions need more than %d hash ids in all; lower the turns, the context or raise block_tokens", maxHashIDs)
		}
		return ids, nil
	}
	fits := func(at time.Duration, total int) bool {
		return at < g.duration && (s.MaxInput <= 0 || total <= s.MaxInput) && total <= MaxPromptTokens
	}
	var think, tool time.Duration
	var after []int // the previous turn and its sub-agents (nil: just the previous turn)
	var subOut int  // output tokens of the previous turn's sub-agents
	var joinAt time.Duration
	n := 0 // turn numbers, main turns and sub-agents alike
	for k := 1; k <= turns; k++ {
		if k > 1 {
			think = time.Duration(cc.think.at(r.norm())) * time.Millisecond
			tool = toolDelay()
			at = max(at+answer(out), joinAt) + think + tool
			total += out + subOut + max(1, cc.newInput.at(r.norm()))
			out = max(1, cc.output.at(r.norm()))
		}
		if !fits(at, total) {
			break
		}
		var err error
		if ids, err = extend(ids, total); err != nil {
			return err
		}
		n++
		req := traces.Request{Arrival: at, InputTokens: total, OutputTokens: out, Class: c.Name,
			Session: session, Turn: n, HashIDs: ids, Temperature: c.Temperature, After: after}
		if k > 1 {
			req.Think, req.ToolDelay = think, tool
		}
		g.reqs = append(g.reqs, req)
		main := n
		after, subOut, joinAt = nil, 0, 0
		// Sub-agents: drawn after every turn but the last (the draws come in a fixed order).
		if cc.fanOut == nil || k == turns {
			continue
		}
		if u := r.float(); u >= s.FanOutProb {
			continue
		}
		m := max(1, cc.fanOut.at(r.norm()))
		after = []int{main}
		for j := 0; j < m; j++ {
			st := toolDelay()
			sat := at + answer(out) + st
			stotal := total + out + max(1, cc.newInput.at(r.norm()))
			sout := max(1, cc.output.at(r.norm()))
			if !fits(sat, stotal) {
				continue
			}
			sids, err := extend(ids, stotal)
			if err != nil {
				return err
			}
			n++
			g.reqs = append(g.reqs, traces.Request{Arrival: sat, InputTokens: stotal, OutputTokens: sout, Class: c.Name,
				Session: session, Turn: n, HashIDs: sids, Temperature: c.Temperature, After: []int{main}, ToolDelay: st})
			after = append(after, n)
			subOut += sout
			joinAt = max(joinAt, sat+answer(sout))
		}
		if len(after) == 1 {
			after = nil
		}
	}
	return nil
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
