package traces

import (
	"slices"
	"strconv"
	"sync"
	"time"
)

// Source transformers: a trace changed as it is read (the first N requests, a temperature
// filled in, copies back to back), so that a command that needs such a change does not hold
// the trace to make it. Each is a Source over another and reads it again on each pass.

// InArrivalOrder calls fn for every request of src in arrival order, position order among
// equal arrivals (the order of a stable sort by arrival), with its position: the held requests
// of multi-turn sessions merged into the walk of the others. q stays valid and must not be
// modified. An error from fn ends the walk and is returned.
func InArrivalOrder(src Source, fn func(pos int, q *Request) error) error {
	type held struct {
		pos int
		q   *Request
	}
	var sessions []held
	src.Sessions(func(pos int, q *Request) { sessions = append(sessions, held{pos, q}) })
	slices.SortStableFunc(sessions, func(a, b held) int {
		if a.q.Arrival != b.q.Arrival {
			return cmpDuration(a.q.Arrival, b.q.Arrival)
		}
		return a.pos - b.pos
	})
	err := src.Singles(func(pos int, q *Request) error {
		for len(sessions) > 0 && (sessions[0].q.Arrival < q.Arrival || sessions[0].q.Arrival == q.Arrival && sessions[0].pos < pos) {
			if err := fn(sessions[0].pos, sessions[0].q); err != nil {
				return err
			}
			sessions = sessions[1:]
		}
		return fn(pos, q)
	})
	if err != nil {
		return err
	}
	for _, h := range sessions {
		if err := fn(h.pos, h.q); err != nil {
			return err
		}
	}
	return nil
}

func cmpDuration(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// described is the Len, Span and Stats of a transformed source, computed in one pass.
type described struct {
	n           int
	first, last time.Duration
	stats       Stats
}

func describeSource(src Source) (described, error) {
	var d described
	b := NewStatsBuilder(DefaultBlockTokens)
	err := InArrivalOrder(src, func(_ int, q *Request) error {
		if d.n == 0 {
			d.first = q.Arrival
		}
		d.last = q.Arrival
		d.n++
		b.Add(q)
		return nil
	})
	d.stats = b.Stats()
	return d, err
}

func (d *described) Len() int                          { return d.n }
func (d *described) Stats() Stats                      { return d.stats }
func (d *described) Span() (first, last time.Duration) { return d.first, d.last }

// Head is the requests of src at positions below n (for a trace read by OpenFile, whose
// positions are in arrival order, its first n requests), at their positions; all of src when
// n <= 0 or n >= src.Len(). It reads src once to describe the part.
func Head(src Source, n int) (Source, error) {
	if n <= 0 || n >= src.Len() {
		return src, nil
	}
	h := &headSource{src: src, n: n}
	d, err := describeSource(h)
	if err != nil {
		return nil, err
	}
	h.described = d
	return h, nil
}

type headSource struct {
	described
	src Source
	n   int
}

func (h *headSource) Sessions(fn func(int, *Request)) {
	h.src.Sessions(func(pos int, q *Request) {
		if pos < h.n {
			fn(pos, q)
		}
	})
}

func (h *headSource) Singles(fn func(int, *Request) error) error {
	return h.src.Singles(func(pos int, q *Request) error {
		if pos < h.n {
			return fn(pos, q)
		}
		return nil
	})
}

func (h *headSource) Requests() ([]Request, error) {
	all, err := h.src.Requests()
	if err != nil {
		return nil, err
	}
	return all[:min(h.n, len(all))], nil
}

// Map is src with every request replaced by f's copy of it; f receives a copy it may change
// and keep, and must not change the arrival (the order of the walk is src's). Len and Span
// are src's; Stats are computed from the mapped requests in one pass.
func Map(src Source, f func(q *Request)) (Source, error) {
	m := &mapSource{src: src, f: f}
	d, err := describeSource(m)
	if err != nil {
		return nil, err
	}
	m.described = d
	return m, nil
}

type mapSource struct {
	described
	src Source
	f   func(*Request)
}

func (m *mapSource) apply(q *Request) *Request {
	c := *q
	m.f(&c)
	return &c
}

func (m *mapSource) Sessions(fn func(int, *Request)) {
	m.src.Sessions(func(pos int, q *Request) { fn(pos, m.apply(q)) })
}

func (m *mapSource) Singles(fn func(int, *Request) error) error {
	return m.src.Singles(func(pos int, q *Request) error { return fn(pos, m.apply(q)) })
}

func (m *mapSource) Requests() ([]Request, error) {
	all, err := m.src.Requests()
	if err != nil {
		return nil, err
	}
	out := make([]Request, len(all))
	for i := range all {
		out[i] = all[i]
		m.f(&out[i])
	}
	return out, nil
}

// TilePeriod is the offset at which a back-to-back copy of a trace starts: its arrival span
// plus one mean inter-arrival gap (one second for a single request).
func TilePeriod(first, last time.Duration, n int) time.Duration {
	if n > 1 {
		span := last - first
		return span + span/time.Duration(n-1)
	}
	return time.Second
}

// Tile is src replayed n times back to back: copy k (from 1) has every arrival shifted by k
// periods (TilePeriod) and "~k" appended to its ids and session names, so ids stay unique and
// sessions stay separate. Copy k's request at position p is at position k·src.Len() + p. Tile
// holds only the sessions' copies; it is src itself when n <= 1.
func Tile(src Source, n int) Source {
	if n <= 1 || src.Len() == 0 {
		return src
	}
	first, last := src.Span()
	t := &tileSource{src: src, copies: n, period: TilePeriod(first, last, src.Len())}
	t.n = n * src.Len()
	t.first, t.last = first, last+time.Duration(n-1)*t.period
	src.Sessions(func(pos int, q *Request) {
		for k := 0; k < n; k++ {
			t.sessions = append(t.sessions, t.copyOf(k, q))
			t.sessionPos = append(t.sessionPos, k*src.Len()+pos)
		}
	})
	return t
}

type tileSource struct {
	described
	src        Source
	copies     int
	period     time.Duration
	sessions   []Request // every copy of every session request
	sessionPos []int
	statsOnce  sync.Once
}

// copyOf is copy k of q.
func (t *tileSource) copyOf(k int, q *Request) Request {
	r := *q
	if k > 0 {
		suffix := "~" + strconv.Itoa(k)
		r.ID += suffix
		if r.Session != "" {
			r.Session += suffix
		}
		r.Arrival += time.Duration(k) * t.period
	}
	return r
}

// Stats describes the tiled trace; it is computed on first use (one pass over the copies).
func (t *tileSource) Stats() Stats {
	t.statsOnce.Do(func() {
		b := NewStatsBuilder(DefaultBlockTokens)
		_ = InArrivalOrder(t, func(_ int, q *Request) error { b.Add(q); return nil })
		t.stats = b.Stats()
	})
	return t.stats
}

func (t *tileSource) Sessions(fn func(int, *Request)) {
	for i := range t.sessions {
		fn(t.sessionPos[i], &t.sessions[i])
	}
}

func (t *tileSource) Singles(fn func(int, *Request) error) error {
	n := t.src.Len()
	for k := 0; k < t.copies; k++ {
		err := t.src.Singles(func(pos int, q *Request) error {
			if k == 0 {
				return fn(pos, q)
			}
			r := t.copyOf(k, q)
			return fn(k*n+pos, &r)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (t *tileSource) Requests() ([]Request, error) {
	all, err := t.src.Requests()
	if err != nil {
		return nil, err
	}
	out := make([]Request, 0, t.copies*len(all))
	for k := 0; k < t.copies; k++ {
		for i := range all {
			out = append(out, t.copyOf(k, &all[i]))
		}
	}
	return out, nil
}
