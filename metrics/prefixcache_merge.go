package metrics

import (
	"fmt"
	"math"
	"strings"
)

// Merged shards' server prefix cache (issue 34). Shards replay parts of one trace, usually
// against the same server: each shard's counter delta then holds every shard's traffic, and
// summing them would count it once per shard. So the shards' scrapes are grouped by the
// server they polled; for one server, the delta is from the latest of its shards' scrapes
// before the window to the earliest after it (the counters are that server's, whichever
// machine read them, so the tightest bracket counts the least outside the window); different
// servers (shards sent to different workers) add up, each
// reported in Endpoints.

// ServerPrefixShard is one shard's scrapes of one server's prefix-cache counters: Points in
// time order, times in seconds from the merged run's epoch.
type ServerPrefixShard struct {
	Endpoint, Backend, Source string
	Points                    []PrefixCounterPoint
	// Note says why the shard has no counters (its ServerPrefixCache.Note), when it has none.
	Note string
}

// MergeServerPrefixCache combines the shards' scrapes into the merged run's server hit rate
// over [startS, endS] (the merged steady window). It returns nil when no shard scraped.
func MergeServerPrefixCache(shards []ServerPrefixShard, startS, endS float64) *ServerPrefixCache {
	if len(shards) == 0 {
		return nil
	}
	var order []string
	byEndpoint := map[string][]ServerPrefixShard{}
	for _, s := range shards {
		if _, ok := byEndpoint[s.Endpoint]; !ok {
			order = append(order, s.Endpoint)
		}
		byEndpoint[s.Endpoint] = append(byEndpoint[s.Endpoint], s)
	}
	out := &ServerPrefixCache{Backend: shards[0].Backend, Source: shards[0].Source, WindowStartS: math.Inf(1), WindowEndS: math.Inf(-1)}
	var notes []string
	for _, ep := range order {
		e, d := mergeOneServer(byEndpoint[ep], startS, endS)
		out.Endpoints = append(out.Endpoints, e)
		if !e.Available {
			notes = append(notes, ep+": "+e.Note)
			continue
		}
		out.Available = true
		out.Hits += e.Hits
		out.Queries += e.Queries
		out.WindowStartS = math.Min(out.WindowStartS, d.WindowStartS)
		out.WindowEndS = math.Max(out.WindowEndS, d.WindowEndS)
		if out.Backend == "" {
			out.Backend = d.Backend
		}
		if out.Source == "" {
			out.Source = d.Source
		}
	}
	if math.IsInf(out.Hits+out.Queries, 0) || math.IsNaN(out.Hits+out.Queries) {
		out.Available, out.Hits, out.Queries = false, 0, 0
		notes = append(notes, "the servers' counters add up to more than a float64 holds")
	}
	if !out.Available {
		out.WindowStartS, out.WindowEndS = 0, 0
	}
	if out.Queries > 0 {
		out.HitRate = out.Hits / out.Queries
	}
	out.Note = fmt.Sprintf("combined from %d scrape series (shards or workers) of %d server(s): a server's delta runs from the latest of its shards' scrapes before the window to the earliest after it; servers add up", len(shards), len(order))
	if len(notes) > 0 {
		out.Note += "; without a figure: " + strings.Join(notes, "; ")
	}
	if len(order) == 1 {
		out.Endpoints = nil // one server: the fields above are its own
	}
	return out
}

// mergeOneServer is one server's delta from the scrapes of the shards that polled it, and the
// delta of the widest-bracketing pair (for its window and names).
func mergeOneServer(shards []ServerPrefixShard, startS, endS float64) (ServerPrefixCacheEndpoint, *ServerPrefixCache) {
	e := ServerPrefixCacheEndpoint{Endpoint: shards[0].Endpoint}
	var start, end *PrefixCounterPoint
	var first *ServerPrefixCache
	for _, s := range shards {
		d := ServerPrefixCacheDelta(s.Backend, s.Source, s.Points, startS, endS)
		if !d.Available {
			continue
		}
		if d.Resets > 0 {
			e.Note = "the counters went back during the window (server restarted?): the shards' scrapes cannot be combined"
			return e, nil
		}
		if first == nil {
			first = d
		}
		i, j := bracket(s.Points, startS, endS)
		start = tighter(start, s.Points[i], func(p PrefixCounterPoint) bool { return p.T <= startS }, 1)
		end = tighter(end, s.Points[j], func(p PrefixCounterPoint) bool { return p.T >= endS }, -1)
	}
	if first == nil {
		e.Note = shards[0].Note
		if e.Note == "" {
			e.Note = "no shard read its prefix-cache counters before and after the window"
		}
		return e, nil
	}
	if end.Hits < start.Hits || end.Queries < start.Queries {
		e.Note = "the counters read by different shards went back (server restarted?)"
		return e, nil
	}
	e.Available = true
	e.Hits, e.Queries = end.Hits-start.Hits, end.Queries-start.Queries
	if e.Queries > 0 {
		e.HitRate = e.Hits / e.Queries
	}
	d := *first
	d.WindowStartS, d.WindowEndS = start.T, end.T
	return e, &d
}

// tighter picks the bracket end to keep of cur and p: one on the right side of the window
// (outside reports whether a point is) over one that is not; between two on the right side
// the closer to the window (dir 1: the larger counters, for the start; -1: the smaller, for
// the end); between two on the wrong side the farther out.
func tighter(cur *PrefixCounterPoint, p PrefixCounterPoint, outside func(PrefixCounterPoint) bool, dir float64) *PrefixCounterPoint {
	if cur == nil {
		return &p
	}
	po, co := outside(p), outside(*cur)
	switch {
	case po && !co:
		return &p
	case co && !po:
		return cur
	case po == (dir*(p.Queries-cur.Queries) > 0):
		return &p
	}
	return cur
}
