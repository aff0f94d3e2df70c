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
