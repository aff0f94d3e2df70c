package metrics

// Agentic sessions: per-session latency from the turns' records. A session is the records
// with the same Session (and Repeat and Arm). Its wall time runs from its first turn's
// intended send to its last turn's end. The critical path walks back from the turn that ended
// last through Record.After (the dependency whose end released each turn) to a turn that
// waited for none; along it, the wall time splits exactly into
//
//   - model: the turns' own latencies, End - Intended (queueing, prefill and decode: the time
//     the agent waits on the model),
//   - tool: the tool delays (Record.ToolDelay) the agent spent running tools, and
//   - think: the users' think times (Record.Think),
//
// when the path starts at the session's first turn (a turn that waited for none but was due
// later — a branch of its own — leaves the gap before it out of all three). A session counts
// as completed when every turn succeeded; only completed sessions feed the distributions. A
// session belongs to the phase of its first turn (by intended time): only steady sessions are
// in the headline, like requests.

// Sessions is the summary's sessions block (present when any request belonged to a session).
type Sessions struct {
	// Count is the number of sessions (of the steady phase); Completed those whose every turn
	// succeeded, Failed the rest (a turn failed, or was dropped behind a failed dependency).
	Count     int `json:"count"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// Turns is the number of turns of all the sessions; TurnsMean and TurnsMax per session.
	Turns     int     `json:"turns"`
	TurnsMean float64 `json:"turns_mean"`
	TurnsMax  int     `json:"turns_max"`
	// WallMs, ModelMs, ToolMs and ThinkMs are the per-session distributions over completed
	// sessions (see the package's note on the critical path).
	WallMs  Dist `json:"wall_ms"`
	ModelMs Dist `json:"model_ms"`
	ToolMs  Dist `json:"tool_ms"`
	ThinkMs Dist `json:"think_ms"`
	// ModelFraction, ToolFraction and ThinkFraction are the sums of model, tool and think time
	// over the sum of wall time of the completed sessions.
	ModelFraction float64 `json:"model_fraction"`
	ToolFraction  float64 `json:"tool_fraction"`
	ThinkFraction float64 `json:"think_fraction"`
}

type sessionKey struct {
	session, arm string
	repeat       int
}

// sessionTurn is what the critical path needs of one turn's record.
type sessionTurn struct {
	id            string
	turn          int
	intended, end int64
	after         string
	think, tool   int64
	ok            bool
	tag           int // the caller's handle on the record (Compare: its index)
	steady        bool
}

// sessionTracker groups turns into sessions.
type sessionTracker struct {
	sessions map[sessionKey][]sessionTurn
	order    []sessionKey
}

func (t *sessionTracker) add(r *Record, tag int) {
	if r.Session == "" {
		return
	}
	if t.sessions == nil {
		t.sessions = map[sessionKey][]sessionTurn{}
	}
	k := sessionKey{r.Session, r.Arm, r.Repeat}
	if _, ok := t.sessions[k]; !ok {
		t.order = append(t.order, k)
	}
	t.sessions[k] = append(t.sessions[k], sessionTurn{id: r.ID, turn: r.Turn, intended: r.Intended, end: r.End,
		after: r.After, think: r.Think, tool: r.ToolDelay, ok: r.OK(), tag: tag, steady: r.Phase == PhaseSteady})
}

// sessionResult is one session's latency split.
type sessionResult struct {
	steady                   bool
	ok                       bool
	turns                    int
	root                     int // tag of the session's first turn (lowest Turn, then earliest)
	wall, model, tool, think int64
}

// each calls fn for every session, in the order their first record came.
func (t *sessionTracker) each(fn func(sessionResult)) {
	for _, k := range t.order {
		fn(splitSession(t.sessions[k]))
	}
}

func splitSession(turns []sessionTurn) sessionResult {
	res := sessionResult{turns: len(turns), ok: true}
	first, last := 0, 0
	root := 0
	for i, q := range turns {
		if !q.ok {
			res.ok = false
		}
		if q.intended < turns[first].intended {
			first = i
		}
		if q.end > turns[last].end {
			last = i
		}
		if q.turn < turns[root].turn || q.turn == turns[root].turn && q.intended < turns[root].intended {
			root = i
		}
	}
	res.steady = turns[first].steady
	res.root = turns[root].tag
	if !res.ok {
		return res
	}
	res.wall = turns[last].end - turns[first].intended
	byID := make(map[string]int, len(turns))
	for i, q := range turns {
		byID[q.id] = i
	}
	cur := last
	for steps := 0; steps < len(turns); steps++ {
		q := turns[cur]
		res.model += q.end - q.intended
		if q.after == "" {
			break
		}
		res.tool += q.tool
		res.think += q.think
		next, ok := byID[q.after]
		if !ok {
			break
		}
		cur = next
	}
	return res
}

// sessionAgg sums the sessions of a summary.
type sessionAgg struct {
	count, completed, turns, turnsMax int
	wall, model, tool, think          float64 // sums, ns
}

// sessions builds the sessions block from the tracked turns and records the session families
// into g's histograms (nil when no record was a session turn).
func (s *summarizer) sessions(g *group) *Sessions {
	if len(s.sess.order) == 0 {
		return nil
	}
	var a sessionAgg
	s.sess.each(func(r sessionResult) {
		if !r.steady {
			return
		}
		a.count++
		a.turns += r.turns
		a.turnsMax = max(a.turnsMax, r.turns)
		if !r.ok {
			return
		}
		a.completed++
		g.h[hSessionWall].recordNs(r.wall)
		g.h[hSessionModel].recordNs(r.model)
		g.h[hSessionTool].recordNs(r.tool)
		g.h[hSessionThink].recordNs(r.think)
		a.wall += float64(r.wall)
		a.model += float64(r.model)
		a.tool += float64(r.tool)
		a.think += float64(r.think)
	})
	d := func(i int) Dist { return g.h[i].dist(histScale(i)) }
	out := &Sessions{Count: a.count, Completed: a.completed, Failed: a.count - a.completed, Turns: a.turns, TurnsMax: a.turnsMax,
		WallMs: d(hSessionWall), ModelMs: d(hSessionModel), ToolMs: d(hSessionTool), ThinkMs: d(hSessionThink)}
	if a.count > 0 {
		out.TurnsMean = float64(a.turns) / float64(a.count)
	}
	if a.wall > 0 {
		out.ModelFraction, out.ToolFraction, out.ThinkFraction = a.model/a.wall, a.tool/a.wall, a.think/a.wall
	}
	return out
}

// setSessionValues puts each completed steady session's wall and model time on its first
// turn's per-request values (Compare pairs sessions by that turn's id).
func setSessionValues(t *sessionTracker, recs []reqVals) {
	t.each(func(r sessionResult) {
		if !r.steady || !r.ok || r.root < 0 || r.root >= len(recs) {
			return
		}
		recs[r.root].sc[sfSessionWall] = float64(r.wall) / 1e6
		recs[r.root].sc[sfSessionModel] = float64(r.model) / 1e6
	})
}
