package loadgen

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// Agentic sessions: turns that depend on several earlier turns (fan-out to sub-agents and
// join), tool delays and the session-affinity header. docs/ARCHITECTURE.md "Agentic sessions"
// and traces/FORMAT.md describe the model; this file is its replay.

// sessionGraph computes the dependencies of a session's turns (sorted by Turn). A session
// whose every turn waits for the one before it keeps the sequential replay of runItem; any
// other shape is replayed as a graph by runGraph.
func (p *planner) sessionGraph(it *item) error {
	deps, err := traces.SessionDeps(it.turns)
	if err != nil {
		de := err.(*traces.DepError)
		q := it.turns[de.Pos]
		return fmt.Errorf("request %q (session %q, turn %d): %s: %s", q.ID, q.Session, q.Turn, de.Field, de.Reason)
	}
	for i, d := range deps {
		if !(i == 0 && len(d) == 0 || i > 0 && len(d) == 1 && d[0] == i-1) {
			it.graph = true
			break
		}
	}
	if !it.graph {
		return nil
	}
	it.deps = deps
	// The lead is the earliest turn that waits for none; the item is scheduled at its arrival.
	it.lead = -1
	for i, d := range deps {
		if len(d) == 0 && (it.lead < 0 || it.turns[i].Arrival < it.turns[it.lead].Arrival) {
			it.lead = i
		}
	}
	it.intended = p.scale(it.turns[it.lead].Arrival)
	return nil
}

// cut drops the dependencies on turns past the end of it.turns (MaxRequests cut the session).
func (it *item) cut() {
	if !it.graph {
		return
	}
	n := len(it.turns)
	deps := make([][]int, n)
	for i := range deps {
		for _, d := range it.deps[i] {
			if d < n {
				deps[i] = append(deps[i], d)
			}
		}
		if it.deps[i] != nil && deps[i] == nil {
			deps[i] = []int{}
		}
	}
	it.deps = deps
	if it.lead >= n {
		it.lead = 0
		for i, d := range deps {
			if len(d) == 0 {
				it.lead = i
				break
			}
		}
	}
}

// scaledNs is a trace duration on the run's timeline (divided by RateScale), in ns.
func (r *runner) scaledNs(d time.Duration) int64 { return int64(float64(d) / r.opts.RateScale) }

// affinity is the session-affinity key of turn q: its Affinity, else its session (one per
// repeat when the trace is replayed several times); "" outside a session.
func (r *runner) affinity(it *item, q *traces.Request) string {
	if q.Affinity != "" {
		return q.Affinity
	}
	if q.Session == "" {
		return ""
	}
	if r.opts.Repeat > 1 {
		return q.Session + ".r" + strconv.Itoa(it.repeat)
	}
	return q.Session
}

// Turn states of a graph replay.
const (
	turnPending = iota
	turnOK
	turnFailed  // sent and failed, or never sent: dependents are dropped
	turnSkipped // outside the run (Duration): dependents are outside too
)

// graphRun is the state of one session replayed as a graph.
type graphRun struct {
	r          *runner
	it         *item
	dependents [][]int
	mu         sync.Mutex
	left       []int // dependencies not yet finished, per turn
	state      []int
	end        []int64
	conv       []conversation // each finished turn's conversation, for its dependents
	wg         sync.WaitGroup
}

// runGraph replays a session whose turns form a graph: the lead turn (k, already built) at
// intended, every other turn that waits for none at its own arrival, and each dependent turn
// once all its dependencies have completed, plus its think time and tool delay (divided by
// RateScale): its Intended is the latest dependency's end plus those. A turn whose dependency
// failed, or was dropped, is not sent: it is recorded as metrics.FailDropped ("never sent: turn
// N of this session, which it depends on, failed or was never sent"), and so, in turn, are its dependents. It
// returns when every turn has its record (closed loop: a worker carries the whole session).
//
// A turn carries the conversation of its first dependency (After's first entry), followed by
// the replies of the others in After order (a join reads its sub-agents' results), as
// assistant messages for chat and as text for completions.
func (r *runner) runGraph(it *item, k *call, intended, dispatched int64) {
	n := len(it.turns)
	g := &graphRun{r: r, it: it, dependents: make([][]int, n), left: make([]int, n),
		state: make([]int, n), end: make([]int64, n), conv: make([]conversation, n)}
	for i, ds := range it.deps {
		g.left[i] = len(ds)
		for _, d := range ds {
			g.dependents[d] = append(g.dependents[d], i)
		}
	}
	lead := it.turns[it.lead]
	// The turns that wait for none, found before any is sent: a sent turn's finish changes
	// left under g.mu.
	var roots []int
	for i := range it.turns {
		if g.left[i] == 0 {
			roots = append(roots, i)
		}
	}
	for _, i := range roots {
		if i == it.lead {
			g.spawn(func() { g.sendRoot(i, k, intended, dispatched) })
			continue
		}
		at := intended + r.scaledNs(it.turns[i].Arrival-lead.Arrival)
		g.spawn(func() { g.sendRoot(i, nil, at, 0) })
	}
	g.wg.Wait()
}

func (g *graphRun) spawn(fn func()) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		fn()
	}()
}

// sendRoot sends turn i, which waits for no other turn, at intended (k nil: built here, and
// dispatched when intended comes).
func (g *graphRun) sendRoot(i int, k *call, intended, dispatched int64) {
	r := g.r
	if k == nil {
		if r.opts.Duration > 0 && time.Duration(intended) >= r.opts.Duration {
			g.finish(i, turnSkipped, 0)
			return
		}
		k = r.buildCall(g.it, i, nil)
		if err := r.clock.SleepUntil(r.soft, r.start.Add(time.Duration(intended))); err != nil {
			g.drop(i, intended, "never sent: the run was interrupted")
			return
		}
		dispatched = r.c.now()
	}
	g.sendTurn(i, k, intended, dispatched)
}

func (g *graphRun) sendTurn(i int, k *call, intended, dispatched int64) {
	var conv conversation
	ok, end := g.r.send(g.it, i, k, &conv, intended, dispatched)
	g.mu.Lock()
	g.conv[i] = conv
	g.mu.Unlock()
	if ok {
		g.finish(i, turnOK, end)
	} else {
		// send emitted the record (a failure, or dropped when interrupted).
		g.finish(i, turnFailed, end)
	}
}

// drop records turn i as never sent, then its dependents.
func (g *graphRun) drop(i int, intended int64, why string) {
	rec := g.r.record(g.it, i, intended)
	rec.Failure = metrics.FailDropped
	rec.Error = why
	g.r.emit(rec)
	g.finish(i, turnFailed, intended)
}

// finish marks turn i done and releases every dependent whose dependencies are now all done.
func (g *graphRun) finish(i, state int, end int64) {
	g.mu.Lock()
	g.state[i], g.end[i] = state, end
	var ready []int
	for _, d := range g.dependents[i] {
		g.left[d]--
		if g.left[d] == 0 {
			ready = append(ready, d)
		}
	}
	g.mu.Unlock()
	for _, d := range ready {
		g.release(d)
	}
}

// release decides what happens to turn d once all its dependencies are done.
func (g *graphRun) release(d int) {
	r, it := g.r, g.it
	q := it.turns[d]
	g.mu.Lock()
	deps := it.deps[d]
	failed, skipped := -1, false
	latest := deps[0]
	for _, p := range deps {
		switch g.state[p] {
		case turnFailed:
			if failed < 0 {
				failed = p
			}
		case turnSkipped:
			skipped = true
		}
		if g.end[p] > g.end[latest] {
			latest = p
		}
	}
	var conv conversation
	if failed < 0 && !skipped {
		conv = g.joined(deps)
	}
	depEnd := g.end[latest]
	g.mu.Unlock()
	switch {
	case failed >= 0:
		g.drop(d, depEnd, fmt.Sprintf("never sent: %s of this session, which it depends on, failed or was never sent", turnLabel(it.turns[failed])))
		return
	case skipped:
		r.skipped.Add(1)
		g.finish(d, turnSkipped, 0)
		return
	}
	think, tool := r.scaledNs(q.Think), r.scaledNs(q.ToolDelay)
	intended := depEnd + think + tool
	if r.opts.Duration > 0 && time.Duration(intended) >= r.opts.Duration {
		r.skipped.Add(1)
		g.finish(d, turnSkipped, 0)
		return
	}
	g.spawn(func() {
		k := r.buildCall(it, d, &conv)
		k.after, k.think, k.toolWait = it.turns[latest].ID, think, tool
		if err := r.clock.SleepUntil(r.soft, r.start.Add(time.Duration(intended))); err != nil {
			g.drop(d, intended, "never sent: the run was interrupted during the think time or tool delay")
			return
		}
		g.sendTurn(d, k, intended, r.c.now())
	})
}

// joined is the conversation a turn with dependencies deps carries (g.mu held): the first
// dependency's, then the other dependencies' replies.
func (g *graphRun) joined(deps []int) conversation {
	base := g.conv[deps[0]]
	if len(deps) == 1 {
		return base
	}
	c := conversation{messages: append([]traces.Message(nil), base.messages...), text: base.text, tokens: base.tokens}
	for _, p := range deps[1:] {
		o := g.conv[p]
		c.messages = append(c.messages, traces.Message{Role: "assistant", Content: o.reply})
		c.text += o.reply
		c.tokens += o.replyTokens
	}
	return c
}

func turnLabel(q *traces.Request) string {
	if q.Turn > 0 {
		return "turn " + strconv.Itoa(q.Turn) + " (" + q.ID + ")"
	}
	return q.ID
}
