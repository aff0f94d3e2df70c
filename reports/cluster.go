package reports

import (
	"fmt"

	"github.com/llmbench/llmbench/metrics"
)

// writeCluster prints the per-replica load of a simulated cluster: one row per replica.
func writeCluster(e *errWriter, c *metrics.Cluster) {
	if c == nil || len(c.Replicas) == 0 {
		return
	}
	e.printf("\n%-14s%9s%14s%14s%12s%8s%13s\n", fmt.Sprintf("Replicas (%d)", len(c.Replicas)), "requests", "input tok", "output tok",
		"prefix hit", "busy", "preemptions")
	for i, r := range c.Replicas {
		e.printf("%-14s%s%s%s%s%s%s\n", fmt.Sprintf("  #%d", i), col(9, fmtInt(int64(r.Requests))), col(14, fmtInt(r.InputTokens)),
			col(14, fmtInt(r.OutputTokens)), col(12, fmtPct(r.PrefixHitRate)), col(8, fmtPct(r.BusyFraction)), col(13, fmtInt(r.Preemptions)))
	}
	e.printf("%-14s%s\n", "", "router "+termSafe(c.Router))
}

// clusterSection is the HTML view of the cluster block: one row per replica, and a chart of
// each replica's requests and prefix-cache hit rate.
func clusterSection(c *metrics.Cluster) (section, bool) {
	if c == nil || len(c.Replicas) == 0 {
		return section{}, false
	}
	t := &table{ID: "replicas", Numeric: true,
		Head: []string{"replica", "requests", "input tokens", "output tokens", "prefix hit", "busy", "preemptions"}}
	cats := make([]string, len(c.Replicas))
	reqs := make([]float64, len(c.Replicas))
	hits := make([]float64, len(c.Replicas))
	for i, r := range c.Replicas {
		cats[i] = fmt.Sprintf("#%d", i)
		reqs[i] = float64(r.Requests)
		hits[i] = rnd(100 * r.PrefixHitRate)
		t.add(txt(cats[i]), txt(fmtInt(int64(r.Requests))), txt(fmtInt(r.InputTokens)), txt(fmtInt(r.OutputTokens)),
			txt(fmtPct(r.PrefixHitRate)), txt(fmtPct(r.BusyFraction)), txt(fmtInt(r.Preemptions)))
	}
	ch := &chartSpec{ID: "replica-load", Title: "Load per replica", Note: "requests routed to each replica (bars) and its prefix-cache hit rate",
		XName: "replica", YName: "requests", Y2Name: "prefix hit %", XCats: cats, Y2Max: 100,
		Series: []seriesSpec{{Name: "requests", Kind: "bar", Data: reqs, Color: colBlue},
			{Name: "prefix hit %", Data: hits, YAxis: 1, Color: colOrange, Symbol: 6}},
		Table: t}
	return section{ID: "cluster", Title: "Replicas",
		Intro:  fmt.Sprintf("%d engine replicas behind the %s router (simulated); the engine's own counts.", len(c.Replicas), c.Router),
		Blocks: []block{{Charts: []*chartSpec{ch}}}}, true
}
