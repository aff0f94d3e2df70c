package reports

import (
	"fmt"

	"github.com/llmbench/llmbench/metrics"
)

// Agentic sessions: the summary's sessions block in the terminal and HTML reports.

func sessionsLine(ss *metrics.Sessions) string {
	if ss.Completed == 0 {
		return fmt.Sprintf("%s sessions (%s turns), none completed", fmtInt(int64(ss.Count)), fmtInt(int64(ss.Turns)))
	}
	return fmt.Sprintf("%s sessions (%s failed), %s turns each · wall p50 %s ms, p99 %s ms · model %s · tools %s · think %s",
		fmtInt(int64(ss.Count)), fmtInt(int64(ss.Failed)), fmtFixed(ss.TurnsMean, 1),
		fmtDistMs(ss.WallMs, ss.WallMs.P50), fmtDistMs(ss.WallMs, ss.WallMs.P99),
		fmtPct(ss.ModelFraction), fmtPct(ss.ToolFraction), fmtPct(ss.ThinkFraction))
}

func sessionsTable(ss *metrics.Sessions) *table {
	t := &table{Caption: "Sessions", Numeric: true}
	t.add(txt("sessions"), keyed("sessions.count", fmtInt(int64(ss.Count))))
	t.add(txt("completed / failed"), txt(fmtInt(int64(ss.Completed))+" / "+fmtInt(int64(ss.Failed))))
	t.add(txt("turns (mean / max per session)"), txt(fmtInt(int64(ss.Turns))+" ("+fmtFixed(ss.TurnsMean, 1)+" / "+fmtInt(int64(ss.TurnsMax))+")"))
	for _, row := range []struct {
		label string
		d     metrics.Dist
	}{{"wall time", ss.WallMs}, {"waiting on the model", ss.ModelMs}, {"running tools", ss.ToolMs}, {"think time", ss.ThinkMs}} {
		t.add(txt(row.label+" p50 / p99 / max"), txt(fmtDistMs(row.d, row.d.P50)+" / "+fmtDistMs(row.d, row.d.P99)+" / "+fmtDistMs(row.d, row.d.Max)+" ms"))
	}
	t.add(txt("share of wall time: model / tools / think"), txt(fmtPct(ss.ModelFraction)+" / "+fmtPct(ss.ToolFraction)+" / "+fmtPct(ss.ThinkFraction)))
	return t
}
