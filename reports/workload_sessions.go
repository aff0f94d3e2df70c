package reports

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Agentic sessions: what the workload block (Summary.Workload, the trace's statistics) says
// about the sessions that were sent — how many, turns per session, fan-out to sub-agents and
// joins, the tool delays — in the terminal summary and the HTML report. The numbers are the
// trace's (traces.Stats and its Agentic part); this file only reads them, by their JSON keys.

// sentSessions is the part of the workload block about sessions.
type sentSessions struct {
	Sessions int `json:"sessions"`
	MaxTurn  int `json:"max_turn"`
	Agentic  *struct {
		TurnsPerSession sentDist `json:"turns_per_session"`
		FanOut          sentDist `json:"fan_out"`
		FanOutTurns     int      `json:"fan_out_turns"`
		JoinTurns       int      `json:"join_turns"`
		ToolDelayMs     struct {
			Count int `json:"count"`
			sentDist
		} `json:"tool_delay_ms"`
		WithAffinity int `json:"with_affinity"`
	} `json:"agentic"`
}

type sentDist struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// workloadSessions reads the sessions part of a workload block; ok is false when the block
// has no sessions (or cannot be read).
func workloadSessions(w any) (sentSessions, bool) {
	var s sentSessions
	if w == nil {
		return s, false
	}
	raw, err := json.Marshal(w)
	if err != nil || json.Unmarshal(raw, &s) != nil {
		return sentSessions{}, false
	}
	return s, s.Sessions > 0
}

// workloadSessionsLine is the terminal summary's line on the sessions sent.
func workloadSessionsLine(s sentSessions) string {
	parts := []string{fmt.Sprintf("%s sessions sent", fmtInt(int64(s.Sessions)))}
	a := s.Agentic
	if a == nil {
		parts = append(parts, fmt.Sprintf("up to %s turns", fmtInt(int64(s.MaxTurn))))
		return strings.Join(parts, " · ")
	}
	parts = append(parts, fmt.Sprintf("%s turns each (p50 %s, max %s)", fmtFixed(a.TurnsPerSession.Mean, 1),
		fmtFixed(a.TurnsPerSession.P50, 0), fmtFixed(a.TurnsPerSession.Max, 0)))
	parts = append(parts, fmt.Sprintf("%s turns fan out to 2+ (up to %s), %s joins", fmtInt(int64(a.FanOutTurns)),
		fmtFixed(a.FanOut.Max, 0), fmtInt(int64(a.JoinTurns))))
	if d := a.ToolDelayMs; d.Count > 0 {
		parts = append(parts, fmt.Sprintf("tool delay in %s turns p50 %s ms, p99 %s ms", fmtInt(int64(d.Count)),
			fmtFixed(d.P50, 0), fmtFixed(d.P99, 0)))
	} else {
		parts = append(parts, "no tool delays")
	}
	return strings.Join(parts, " · ")
}

// workloadSessionsTable is the HTML workload section's table of the sessions sent.
func workloadSessionsTable(s sentSessions) *table {
	t := &table{Caption: "Sessions sent", Numeric: true}
	t.add(txt("sessions"), txt(fmtInt(int64(s.Sessions))))
	a := s.Agentic
	if a == nil {
		t.add(txt("most turns in a session"), txt(fmtInt(int64(s.MaxTurn))))
		return t
	}
	d := a.TurnsPerSession
	t.add(txt("turns per session (mean / p50 / p90 / max)"), txt(fmtFixed(d.Mean, 1)+" / "+fmtFixed(d.P50, 0)+" / "+fmtFixed(d.P90, 0)+" / "+fmtFixed(d.Max, 0)))
	t.add(txt("turns that two or more wait for (fan-out)"), txt(fmtInt(int64(a.FanOutTurns))))
	t.add(txt("most turns waiting on one turn"), txt(fmtFixed(a.FanOut.Max, 0)))
	t.add(txt("turns that wait for two or more (joins)"), txt(fmtInt(int64(a.JoinTurns))))
	if td := a.ToolDelayMs; td.Count > 0 {
		t.add(txt("turns with a tool delay"), txt(fmtInt(int64(td.Count))))
		t.add(txt("tool delay min / p50 / p90 / p99 / max"), txt(fmtFixed(td.Min, 0)+" / "+fmtFixed(td.P50, 0)+" / "+fmtFixed(td.P90, 0)+" / "+fmtFixed(td.P99, 0)+" / "+fmtFixed(td.Max, 0)+" ms"))
	} else {
		t.add(txt("turns with a tool delay"), txt("0"))
	}
	t.add(txt("requests with an explicit affinity key"), txt(fmtInt(int64(a.WithAffinity))))
	return t
}
