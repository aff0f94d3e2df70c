package traces

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/safetext"
)

// Agentic sessions: the dependencies between the turns of a session (after), tool delays and
// the session-affinity key. FORMAT.md "Agentic sessions" is the reference.

// afterRef is one entry of a trace line's "after": a turn number of the same session, or the
// id of one of its turns.
type afterRef struct {
	turn int
	id   string
}

func (a afterRef) String() string {
	if a.id != "" {
		return "id " + safetext.Quote(a.id, 64)
	}
	return "turn " + strconv.Itoa(a.turn)
}

// MaxAfter bounds the entries of one "after" list (a join of more sub-agents than this is not
// a trace anyone records, and the bound keeps a hostile line from costing memory).
const MaxAfter = 1024

func decodeAfter(v any) ([]afterRef, []fieldError) {
	arr, ok := v.([]any)
	if !ok {
		return nil, []fieldError{{fAfter, "must be an array of turn numbers or ids, e.g. [1] or [\"plan\"] (got " + describe(v) + ")"}}
	}
	if len(arr) > MaxAfter {
		return nil, []fieldError{{fAfter, fmt.Sprintf("must list at most %d turns (got %d)", MaxAfter, len(arr))}}
	}
	refs := make([]afterRef, 0, len(arr))
	var errs []fieldError
	for i, e := range arr {
		at := fmt.Sprintf("%s[%d]", fAfter, i)
		if s, isStr := e.(string); isStr {
			id, why := stringField(s, true, "must be a non-empty id")
			if why == "" {
				why = checkID(id)
			}
			if why != "" {
				errs = append(errs, fieldError{at, why})
				continue
			}
			refs = append(refs, afterRef{id: id})
			continue
		}
		n, why := boundedInt(e, 1, MaxTurn, "must be a turn number >= 1 or an id string", fmt.Sprintf("must be at most %d", MaxTurn))
		if why != "" {
			errs = append(errs, fieldError{at, why})
			continue
		}
		refs = append(refs, afterRef{turn: int(n)})
	}
	return refs, errs
}

// checkHeaderValue rejects an affinity key that cannot travel as an HTTP header value.
func checkHeaderValue(v string) string {
	if len(v) > MaxIDBytes {
		return fmt.Sprintf("must be at most %d bytes (got %d; it is sent as the session header)", MaxIDBytes, len(v))
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == 0x7f {
			return "must not hold control characters (it is sent as the session header; got " + safetext.Quote(v, 40) + ")"
		}
	}
	return ""
}

// SortTurns sorts the turns of one session by Turn, keeping the given order of equal turns:
// the order in which SessionDeps, the replayer and the statistics read a session.
func SortTurns(turns []*Request) {
	sort.SliceStable(turns, func(a, b int) bool { return turns[a].Turn < turns[b].Turn })
}

// DepError is a problem with the dependencies of one turn: Pos is its index in the turns
// given to SessionDeps.
type DepError struct {
	Pos    int
	Field  string
	Reason string
}

func (e *DepError) Error() string { return e.Field + ": " + e.Reason }

// SessionDeps returns, for the turns of one session sorted by SortTurns, the positions of each
// turn's dependencies: its After turn numbers, or the previous position when After is nil (none
// for the first turn). A turn number that no turn of the session has, a turn that depends on
// itself, and a cycle are errors.
func SessionDeps(turns []*Request) ([][]int, error) {
	pos := make(map[int]int, len(turns))
	for i, q := range turns {
		if q.Turn > 0 {
			if _, dup := pos[q.Turn]; !dup {
				pos[q.Turn] = i
			}
		}
	}
	deps := make([][]int, len(turns))
	for i, q := range turns {
		if q.After == nil {
			if i > 0 {
				deps[i] = []int{i - 1}
			}
			continue
		}
		ds := make([]int, 0, len(q.After))
		for k, t := range q.After {
			j, ok := pos[t]
			switch {
			case !ok:
				return nil, &DepError{i, fmt.Sprintf("%s[%d]", fAfter, k), fmt.Sprintf("no turn %d in session %s (a dependency must be a turn of the same session)", t, safetext.Quote(q.Session, 64))}
			case j == i:
				return nil, &DepError{i, fmt.Sprintf("%s[%d]", fAfter, k), fmt.Sprintf("turn %d cannot depend on itself", t)}
			}
			if !containsInt(ds, j) {
				ds = append(ds, j)
			}
		}
		deps[i] = ds
	}
	if i, cycle := findCycle(deps); i >= 0 {
		names := make([]string, len(cycle))
		for k, p := range cycle {
			names[k] = turnName(turns[p])
		}
		return nil, &DepError{i, fAfter, fmt.Sprintf("dependency cycle in session %s: %s (each turn waits for the next; break the cycle)", safetext.Quote(turns[i].Session, 64), strings.Join(names, " -> "))}
	}
	return deps, nil
}

func turnName(q *Request) string {
	if q.Turn > 0 {
		return "turn " + strconv.Itoa(q.Turn)
	}
	return "id " + safetext.Quote(q.ID, 32)
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// findCycle returns a position on a cycle of deps and the cycle from it (waiting order), or -1.
func findCycle(deps [][]int) (int, []int) {
	const (
		unseen = iota
		open
		done
	)
	state := make([]uint8, len(deps))
	var stack []int
	var found []int
	var visit func(v int) bool
	visit = func(v int) bool {
		state[v] = open
		stack = append(stack, v)
		for _, w := range deps[v] {
			if state[w] == open {
				for k := len(stack) - 1; k >= 0; k-- {
					if stack[k] == w {
						found = append(append([]int(nil), stack[k:]...), w)
						break
					}
				}
				return true
			}
			if state[w] == unseen && visit(w) {
				return true
			}
		}
		stack = stack[:len(stack)-1]
		state[v] = done
		return false
	}
	for v := range deps {
		if state[v] == unseen && visit(v) {
			return found[0], found
		}
	}
	return -1, nil
}

// resolveAfter turns every request's afterRefs into After (turn numbers), then checks each
// session's dependencies (SessionDeps). errf receives each problem; it returns false once errf
// said stop.
func resolveAfter(reqs []Request, name string, errf func(*LineError) bool) bool {
	type key struct{ session, id string }
	byID := map[key]int{}
	sessions := map[string][]int{}
	agentic := false
	for i := range reqs {
		r := &reqs[i]
		if r.afterRefs != nil {
			agentic = true
		}
		if r.Session != "" {
			byID[key{r.Session, r.ID}] = i
			sessions[r.Session] = append(sessions[r.Session], i)
		}
	}
	if !agentic {
		return true
	}
	idLine := map[string]int{}
	for i := range reqs {
		idLine[reqs[i].ID] = i
	}
	for i := range reqs {
		r := &reqs[i]
		if r.afterRefs == nil {
			continue
		}
		after := make([]int, 0, len(r.afterRefs))
		for k, a := range r.afterRefs {
			field := fmt.Sprintf("%s[%d]", fAfter, k)
			if a.id == "" {
				after = append(after, a.turn)
				continue
			}
			j, ok := byID[key{r.Session, a.id}]
			var why string
			switch {
			case !ok:
				if o, elsewhere := idLine[a.id]; elsewhere {
					why = fmt.Sprintf("request %s (line %d) is not a turn of session %s", safetext.Quote(a.id, 64), reqs[o].Line, safetext.Quote(r.Session, 64))
				} else {
					why = fmt.Sprintf("no request has id %s (a dependency must be a turn of the same session)", safetext.Quote(a.id, 64))
				}
			case reqs[j].Turn == 0:
				why = fmt.Sprintf("request %s (line %d) has no turn number (give it a \"turn\")", safetext.Quote(a.id, 64), reqs[j].Line)
			}
			if why != "" {
				if !errf(&LineError{File: name, Line: r.Line, Field: field, Reason: why}) {
					return false
				}
				continue
			}
			after = append(after, reqs[j].Turn)
		}
		r.After = after
		r.afterRefs = nil
	}
	names := make([]string, 0, len(sessions))
	for s := range sessions {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		idx := sessions[s]
		turns := make([]*Request, len(idx))
		for k, i := range idx {
			turns[k] = &reqs[i]
		}
		SortTurns(turns)
		if _, err := SessionDeps(turns); err != nil {
			de := err.(*DepError)
			if !errf(&LineError{File: name, Line: turns[de.Pos].Line, Field: de.Field, Reason: de.Reason}) {
				return false
			}
		}
	}
	return true
}

// hasAgentic reports whether r uses a field of agentic sessions (the replay then holds the
// trace in memory: dependencies are resolved across lines).
func (r *Request) hasAgentic() bool { return r.afterRefs != nil || r.After != nil }
