package reports

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/traces"
)

// TestWorkloadDescribesSessions: the workload block of an agentic trace (its traces.Stats, as
// run puts it in the summary, and the same read back from summary.json) gives the terminal
// summary a line on the sessions sent — count, turns per session, fan-out and joins, tool
// delays — and the HTML workload section a table of them, and its distributions are not drawn
// as token lengths.
func TestWorkloadDescribesSessions(t *testing.T) {
	reqs, err := traces.ReadFile("../traces/testdata/agentic.jsonl", traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := traces.ComputeStats(reqs)
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON any
	if err := json.Unmarshal(raw, &fromJSON); err != nil {
		t.Fatal(err)
	}
	const want = "2 sessions sent · 3.5 turns each (p50 2, max 5) · 1 turns fan out to 2+ (up to 2), 1 joins · tool delay in 2 turns p50 250 ms, p99 500 ms"
	for name, w := range map[string]any{"stats": st, "summary.json": fromJSON} {
		ss, ok := workloadSessions(w)
		if !ok {
			t.Fatalf("%s: no sessions found", name)
		}
		if got := workloadSessionsLine(ss); got != want {
			t.Errorf("%s: line\n%q, want\n%q", name, got, want)
		}
		sec, ok := workloadSection(w)
		if !ok {
			t.Fatalf("%s: no workload section", name)
		}
		var found bool
		for _, b := range sec.Blocks {
			for _, c := range b.Charts {
				for _, s := range c.Series {
					if strings.Contains(s.Name, "agentic") || strings.Contains(s.Name, "turns") || strings.Contains(s.Name, "delay") {
						t.Errorf("%s: %q drawn as a token length", name, s.Name)
					}
				}
			}
			if b.Table != nil && b.Table.Caption == "Sessions sent" {
				found = true
				rows := map[string]string{}
				for _, r := range b.Table.Rows {
					rows[r[0].Text] = r[1].Text
				}
				if rows["sessions"] != "2" || rows["turns that wait for two or more (joins)"] != "1" ||
					rows["tool delay min / p50 / p90 / p99 / max"] != "250 / 250 / 500 / 500 / 500 ms" || rows["requests with an explicit affinity key"] != "1" {
					t.Errorf("%s: sessions table %v", name, rows)
				}
			}
		}
		if !found {
			t.Errorf("%s: no sessions table in the workload section", name)
		}
	}
	// A trace without sessions has no such line.
	if _, ok := workloadSessions(map[string]any{"count": 3, "sessions": 0}); ok {
		t.Error("sessions found in a workload without any")
	}
}
