package metrics

import (
	"fmt"
	"math"
)

// ServerPrefixCache is the server's own prefix-cache hit rate over a run, from its Prometheus
// counters (runner/scrape.go): the increase of the cached-token and queried-token counters
// between a scrape at the start and one at the end of the measured window. The counters are
// cumulative since the server started, and a logged or gauge rate is a rolling window: neither
// is "this run", the delta is. Available is false when the server exports no such counters;
// Note then says what it does export.
type ServerPrefixCache struct {
	// Backend is the server family recognized from its metric names: "vllm", "sglang", "tgi",
	// "llamacpp", or "" when none was recognized.
	Backend string `json:"backend,omitempty"`
	// Available is true when the counters were found in two scrapes bracketing the window.
	Available bool `json:"available"`
	// Source names the two counters read (hits / queries).
	Source string `json:"source,omitempty"`
	// Hits and Queries are the counters' increase between the two scrapes, in tokens; HitRate
	// is Hits / Queries (0 when Queries is 0).
	Hits    float64 `json:"hits"`
	Queries float64 `json:"queries"`
	HitRate float64 `json:"hit_rate"`
	// WindowStartS and WindowEndS are the times of the two scrapes, in seconds from the run
	// epoch (the records' time zero): the delta covers what the server did between them.
	WindowStartS float64 `json:"window_start_s"`
	WindowEndS   float64 `json:"window_end_s"`
	// Resets counts the scrapes where a counter went back (the server restarted): the
	// increase is counted from zero after each, as Prometheus's increase() does.
	Resets int `json:"resets,omitempty"`
	// Note explains, in words, what the figure covers or why there is none.
	Note string `json:"note,omitempty"`

	// Endpoints (issue 34, per server): when the figure combines several servers' counters
	// (merged shards that scraped different workers), each server's own share, in the order
	// first seen; the fields above are then their sums. Absent for one server.
	Endpoints []ServerPrefixCacheEndpoint `json:"endpoints,omitempty"`
}

// ServerPrefixCacheEndpoint is one server's prefix-cache counters over the window, as the
// fields of ServerPrefixCache with the same names.
type ServerPrefixCacheEndpoint struct {
	Endpoint  string  `json:"endpoint"`
	Available bool    `json:"available"`
	Hits      float64 `json:"hits"`
	Queries   float64 `json:"queries"`
	HitRate   float64 `json:"hit_rate"`
	Note      string  `json:"note,omitempty"`
}

// PrefixCounterPoint is one scrape of a server's prefix-cache counters: T in seconds from the
// run epoch, Hits and Queries the counters' values (cumulative).
type PrefixCounterPoint struct {
	T, Hits, Queries float64
}

// ServerPrefixCacheDelta computes the hit rate over [startS, endS] from scrapes pts (in time
// order). The start scrape is the last at or before startS (else the first, and Note says so);
// the end scrape is the first at or after endS (else the last, and Note says so). The increase
// is summed scrape by scrape, so a counter that goes back (a server restart) counts as a reset,
// never as a negative delta. With fewer than two scrapes it returns Available false and a note.
func ServerPrefixCacheDelta(backend, source string, pts []PrefixCounterPoint, startS, endS float64) *ServerPrefixCache {
	out := &ServerPrefixCache{Backend: backend, Source: source}
	if len(pts) < 2 {
		out.Note = fmt.Sprintf("the prefix-cache counters were read in %d scrape(s); two, at the start and end of the window, are needed for a per-run delta", len(pts))
		return out
	}
	i, j := bracket(pts, startS, endS)
	if j <= i {
		out.Note = "no two scrapes of the prefix-cache counters bracket the measured window"
		return out
	}
	out.Available = true
	out.WindowStartS, out.WindowEndS = pts[i].T, pts[j].T
	for k := i + 1; k <= j; k++ {
		prev, cur := pts[k-1], pts[k]
		if cur.Hits < prev.Hits || cur.Queries < prev.Queries {
			out.Resets++
			out.Hits += cur.Hits
			out.Queries += cur.Queries
			continue
		}
		out.Hits += cur.Hits - prev.Hits
		out.Queries += cur.Queries - prev.Queries
	}
	if math.IsInf(out.Hits, 0) || math.IsInf(out.Queries, 0) || math.IsNaN(out.Hits+out.Queries) {
		return &ServerPrefixCache{Backend: backend, Source: source, Note: "the prefix-cache counters' values are out of range"}
	}
	if out.Queries > 0 {
		out.HitRate = out.Hits / out.Queries
	}
	out.Note = deltaNote(out, pts[i].T > startS, pts[j].T < endS)
	return out
}

// bracket returns the scrapes of pts (in time order, at least two) that bracket [startS,
// endS]: the last at or before startS (else the first) and the first at or after endS (else
// the last).
func bracket(pts []PrefixCounterPoint, startS, endS float64) (i, j int) {
	i, j = 0, len(pts)-1
	for k, p := range pts {
		if p.T <= startS {
			i = k
		}
	}
	for k := len(pts) - 1; k >= 0; k-- {
		if pts[k].T >= endS {
			j = k
		}
	}
	return i, j
}

// deltaNote says what a delta covers beyond the window, and how many resets it crossed.
func deltaNote(s *ServerPrefixCache, lateStart, earlyEnd bool) string {
	note := "counter increase between the scrapes bracketing the measured window; it includes whatever else the server did between them"
	if lateStart {
		note += "; no scrape before the window's start: counted from the first scrape"
	}
	if earlyEnd {
		note += "; no scrape after the window's end: counted to the last scrape"
	}
	if s.Resets > 0 {
		note += fmt.Sprintf("; the counters went back %d time(s) (server restarted?): counted from zero after each, what the server did between the last scrape and a restart is lost", s.Resets)
	}
	return note
}
