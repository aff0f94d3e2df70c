package engineadapter

import (
	"container/heap"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

// Sessions on the engine's timeline (docs/ARCHITECTURE.md "Agentic sessions"): as run sends a
// session turn once all its dependencies have completed plus its think time and tool delay,
// simulate releases it then on the engine's virtual clock. A release queue holds the requests
// whose time is known (every request outside a session, and each turn that waits for none, at
// its arrival; a dependent turn once its last dependency finished); the engine is stepped finish
// by finish (refengine.Simulation.RunUntil), so that what a completion releases reaches the
// engine exactly when it is due. The prompts are those run builds: a turn carries the prompt and
// reply of its first dependency and the other dependencies' replies, then its own text (for a
// turn with token counts only, what its whole input has beyond that: workloads.Prompter.TurnText),
// so the prefix cache sees the growing context as it does over HTTP.

// hasSessions reports whether any request belongs to a session.
func hasSessions(reqs []traces.Request) bool {
	for i := range reqs {
		if reqs[i].Session != "" {
			return true
		}
	}
	return false
}

// release is a request whose time on the engine is known.
type release struct {
	at  time.Duration
	pos int
}

type releaseQueue []release

func (q releaseQueue) Len() int { return len(q) }
func (q releaseQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].pos < q[j].pos
}
func (q releaseQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *releaseQueue) Push(x any)   { *q = append(*q, x.(release)) }
func (q *releaseQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// Turn states of a session simulation.
const (
	simPending = iota
	simOK
	simFailed // failed, or dropped behind a failed dependency
)

// sessionSim is one simulation of a trace with sessions.
type sessionSim struct {
	a          *Simulator
	watch      *queueWatch
	reqs       []traces.Request
	deps       [][]int // positions each request waits for; nil for none
	dependents [][]int
	left       []int
	state      []uint8
	finish     []time.Duration
	prompt     []string // each request's prompt text, kept until its dependents are built
	reply      []string
	built      []bool
	// tokens is each finished request's conversation length (prompt and reply), replyTokens
	// its reply's.
	tokens, replyTokens []int
	prompter            *workloads.Prompter
	queue               releaseQueue
	sim                 *refengine.Simulation
	outputs             map[int]*refengine.Output // finished requests' outputs, until done takes them
	images              imageFiles                // image files read so far
	emit                func(*metrics.Record)
	err                 error
}

// sessionDeps computes, per request, the positions in reqs of the turns it waits for: a turn's
// After (turn numbers), or the previous turn of its session when After is nil; dependencies on
// turns the trace lacks (a cut trace) are left out, as run does.
func sessionDeps(reqs []traces.Request) ([][]int, error) {
	deps := make([][]int, len(reqs))
	bySession := map[string][]int{}
	var order []string
	for i := range reqs {
		if s := reqs[i].Session; s != "" {
			if _, ok := bySession[s]; !ok {
				order = append(order, s)
			}
			bySession[s] = append(bySession[s], i)
		}
	}
	for _, s := range order {
		idx := bySession[s]
		turns := make([]*traces.Request, len(idx))
		for k, i := range idx {
			turns[k] = &reqs[i]
		}
		// Sort the positions with the turns (traces.SortTurns is stable, by Turn).
		pos := make(map[*traces.Request]int, len(idx))
		for k, q := range turns {
			pos[q] = idx[k]
		}
		traces.SortTurns(turns)
		byTurn := map[int]int{}
		for _, q := range turns {
			if q.Turn > 0 {
				if _, dup := byTurn[q.Turn]; !dup {
					byTurn[q.Turn] = pos[q]
				}
			}
		}
		for k, q := range turns {
			i := pos[q]
			if q.After == nil {
				if k > 0 {
					deps[i] = []int{pos[turns[k-1]]}
				}
				continue
			}
			for _, t := range q.After {
				if j, ok := byTurn[t]; ok && j != i {
					deps[i] = append(deps[i], j)
				}
			}
		}
	}
	// A cycle would never release: refuse it as the trace reader does.
	state := make([]uint8, len(reqs))
	var visit func(i int) bool
	visit = func(i int) bool {
		state[i] = 1
		for _, d := range deps[i] {
			if state[d] == 1 || state[d] == 0 && !visit(d) {
				return false
			}
		}
		state[i] = 2
		return true
	}
	for i := range reqs {
		if state[i] == 0 && !visit(i) {
			return nil, fmt.Errorf("request %q (session %q): its dependencies form a cycle", reqs[i].ID, reqs[i].Session)
		}
	}
	return deps, nil
}

func (a *Simulator) produceSessions(reqs []traces.Request, end time.Duration, watch *queueWatch, sink func(*metrics.Record)) (refengine.SimStats, refengine.Info, error) {
	deps, err := sessionDeps(reqs)
	if err != nil {
		return refengine.SimStats{}, refengine.Info{}, err
	}
	n := len(reqs)
	s := &sessionSim{a: a, watch: watch, reqs: reqs, deps: deps, dependents: make([][]int, n), left: make([]int, n),
		state: make([]uint8, n), finish: make([]time.Duration, n), prompt: make([]string, n), reply: make([]string, n), built: make([]bool, n), tokens: make([]int, n), replyTokens: make([]int, n),
		prompter: workloads.NewPrompter(tokenizer.Reference{}, int64(a.Config.Seed), a.Config.HashIDTokens), images: imageFiles{}}
	s.emit = func(rec *metrics.Record) {
		rec.Phase = metrics.PhaseOf(time.Duration(rec.Intended), a.Warmup, a.Cooldown, end)
		sink(rec)
	}
	for i, ds := range deps {
		s.left[i] = len(ds)
		for _, d := range ds {
			s.dependents[d] = append(s.dependents[d], i)
		}
		if len(ds) == 0 {
			s.queue = append(s.queue, release{a.scale(reqs[i].Arrival), i})
		}
	}
	heap.Init(&s.queue)
	s.sim, err = refengine.NewSimulation(a.Config, s.done)
	if err != nil {
		return refengine.SimStats{}, refengine.Info{}, err
	}
	s.sim.OnOutput = func(pos int, out refengine.Output) {
		if s.outputs == nil {
			s.outputs = map[int]*refengine.Output{}
		}
		s.outputs[pos] = &out
	}
	for s.err == nil && (len(s.queue) > 0 || s.sim.InFlight() > 0) {
		at := time.Duration(math.MaxInt64)
		if len(s.queue) > 0 {
			at = s.queue[0].at
		}
		in := s.sim.InFlight()
		reached := s.sim.RunUntil(at)
		if reached < at {
			continue // completions may have released earlier turns
		}
		if len(s.queue) == 0 {
			if s.sim.InFlight() == in {
				break // stalled: Finish says why
			}
			continue
		}
		r := heap.Pop(&s.queue).(release)
		q, err := s.simRequest(r)
		if err != nil {
			return refengine.SimStats{}, refengine.Info{}, err
		}
		if err := s.sim.Add(r.pos, &q); err != nil {
			return refengine.SimStats{}, refengine.Info{}, err
		}
	}
	if s.err != nil {
		return refengine.SimStats{}, refengine.Info{}, s.err
	}
	st, err := s.sim.Finish()
	return st, s.sim.Info(), err
}

func (a *Simulator) scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) / a.RateScale)
}

// simRequest is the engine's request for r: the trace request with its prompt built as run
// builds it (its images and answer fields as simulate sends them), arriving at r.at.
func (s *sessionSim) simRequest(r release) (refengine.SimRequest, error) {
	q := &s.reqs[r.pos]
	one := simRequests(s.reqs[r.pos:r.pos+1], s.a.RateScale, s.a.KeepOutput)
	if err := s.images.add(one, s.reqs[r.pos:r.pos+1]); err != nil {
		return refengine.SimRequest{}, err
	}
	sr := one[0]
	sr.Arrival = r.at
	own := q.Prompt
	if own == "" && len(q.Messages) > 0 {
		for _, m := range q.Messages {
			own += m.Content
		}
	}
	prefix, convTokens := "", 0
	if ds := s.deps[r.pos]; len(ds) > 0 && !q.HoldsHistory() { // messages holding the history carry none
		prefix, convTokens = s.prompt[ds[0]]+s.reply[ds[0]], s.tokens[ds[0]]
		for _, d := range ds[1:] {
			prefix += s.reply[d]
			convTokens += s.replyTokens[d]
		}
	}
	if own == "" {
		var carry bool
		own, carry = s.prompter.TurnText(q, convTokens)
		if !carry {
			prefix = ""
		}
	}
	sr.Prompt, sr.HashIDs = prefix+own, nil
	s.prompt[r.pos] = sr.Prompt
	s.built[r.pos] = true
	s.release(s.deps[r.pos])
	return sr, nil
}

// release frees the texts of the dependencies ps whose every dependent has been built or
// dropped.
func (s *sessionSim) release(ps []int) {
	for _, p := range ps {
		free := true
		for _, d := range s.dependents[p] {
			if !s.built[d] && s.state[d] != simFailed {
				free = false
				break
			}
		}
		if free {
			s.prompt[p], s.reply[p] = "", ""
		}
	}
}

// done receives a finished timeline from the engine: its record, and the dependents it
// releases.
func (s *sessionSim) done(pos int, tl *refengine.Timeline) {
	q := &s.reqs[pos]
	s.watch.observe(tl)
	rec := TimelineRecord(tl, q)
	if o := s.outputs[pos]; o != nil {
		setOutput(rec, o)
		delete(s.outputs, pos)
	}
	if ds := s.deps[pos]; len(ds) > 0 {
		latest := ds[0]
		for _, d := range ds[1:] {
			if s.finish[d] > s.finish[latest] {
				latest = d
			}
		}
		rec.After = s.reqs[latest].ID
		rec.Think, rec.ToolDelay = int64(s.a.scale(q.Think)), int64(s.a.scale(q.ToolDelay))
	}
	s.finish[pos] = max(tl.Finish, tl.Arrival) // a timeline that did not finish ends where it began
	s.tokens[pos], s.replyTokens[pos] = tl.PromptTokens+tl.OutputTokens, tl.OutputTokens
	s.state[pos] = simOK
	if !rec.OK() {
		s.state[pos] = simFailed
	}
	if len(s.dependents[pos]) > 0 {
		s.reply[pos] = tokenizer.Text(tl.OutputSeed, 0, tl.OutputTokens)
	} else {
		s.prompt[pos] = ""
	}
	s.emit(rec)
	s.settle(pos)
}

// settle counts turn pos done for its dependents and releases (or drops) those it completes.
func (s *sessionSim) settle(pos int) {
	for _, d := range s.dependents[pos] {
		s.left[d]--
		if s.left[d] > 0 {
			continue
		}
		ds := s.deps[d]
		failed, latest := -1, ds[0]
		for _, p := range ds {
			if s.state[p] == simFailed && failed < 0 {
				failed = p
			}
			if s.finish[p] > s.finish[latest] {
				latest = p
			}
		}
		if failed >= 0 {
			q := &s.reqs[d]
			rec := &metrics.Record{ID: q.ID, Class: q.Class, Session: q.Session, Turn: q.Turn, Model: q.Model,
				Intended: int64(s.finish[latest]), InputTokens: q.InputTokens, RequestedTokens: q.OutputTokens,
				ServerInputTokens: -1, ServerOutputTokens: -1, Failure: metrics.FailDropped,
				Error: fmt.Sprintf("never sent: %s of this session, which it depends on, failed or was never sent", turnLabel(&s.reqs[failed]))}
			s.state[d], s.finish[d] = simFailed, s.finish[latest]
			s.emit(rec)
			s.release(ds)
			s.settle(d)
			continue
		}
		q := &s.reqs[d]
		heap.Push(&s.queue, release{s.finish[latest] + s.a.scale(q.Think) + s.a.scale(q.ToolDelay), d})
	}
}

func turnLabel(q *traces.Request) string {
	if q.Turn > 0 {
		return "turn " + strconv.Itoa(q.Turn) + " (" + q.ID + ")"
	}
	return q.ID
}
