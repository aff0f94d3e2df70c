package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchLongStreams runs the long-streams scenario at a tiny size, as JSON and as a
// table, and checks that each point reports the figures issue 18 names (values are not
// judged: targets live in the command's output, not in unit tests).
func TestBenchLongStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("self-benchmark skipped in -short mode")
	}
	app := newTestApp(nil)
	if code := app.cli("bench", "--scenario", "long-streams", "--json", "--in-flight", "10,20", "--token-gap", "5ms", "--window", "100ms", "--ramp-rate", "1000"); code != 0 {
		t.Fatalf("bench: exit %d: %s", code, app.err.String())
	}
	var f struct {
		Points  []map[string]any `json:"points"`
		FDLimit *float64         `json:"fd_limit"`
	}
	if err := json.Unmarshal([]byte(app.out.String()), &f); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, app.out.String())
	}
	if len(f.Points) != 2 || f.FDLimit == nil {
		t.Fatalf("points %v, fd_limit %v", f.Points, f.FDLimit)
	}
	for _, p := range f.Points {
		for _, k := range []string{"lag_p99_ms", "arrival_error_p99_ms", "rss_per_stream_kb", "connections", "succeeded", "wake_floor_p99_ms"} {
			if v, ok := p[k].(float64); !ok || v < 0 {
				t.Errorf("point %v: %s = %v", p["streams"], k, p[k])
			}
		}
		if v, ok := p["cpu_steal_fraction"].(float64); !ok || v < -1 || v > 1 {
			t.Errorf("point %v: cpu_steal_fraction = %v, want a fraction or -1 (unknown)", p["streams"], p["cpu_steal_fraction"])
		}
		if _, ok := p["runs"]; ok {
			t.Errorf("point %v: one run, but the runs are listed", p["streams"])
		}
	}
	app = newTestApp(nil)
	if code := app.cli("bench", "--scenario", "long-streams", "--http2", "--runs", "2", "--in-flight", "10", "--token-gap", "5ms", "--window", "100ms"); code != 0 {
		t.Fatalf("bench --http2 --runs 2: exit %d: %s", code, app.err.String())
	}
	if out := app.out.String(); !strings.Contains(out, "HTTP/2 (h2c)") || !strings.Contains(out, "rss_per_stream_kb") || !strings.Contains(out, "medians of 2 runs") || !strings.Contains(out, "wake_floor_p99_ms") {
		t.Errorf("table:\n%s", out)
	}
	if log := app.err.String(); !strings.Contains(log, "10 streams (run 1/2)") || !strings.Contains(log, "10 streams (run 2/2)") {
		t.Errorf("every run is printed; stderr:\n%s", log)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--scenario", "nope"}, "want client or long-streams"},
		{[]string{"--scenario", "long-streams", "--in-flight", "0"}, "--in-flight 0"},
		{[]string{"--scenario", "long-streams", "--source-addrs", "x"}, "--source-addrs"},
		{[]string{"--scenario", "long-streams", "--runs", "0"}, "--runs 0"},
		// A flag of the other scenario is refused, not ignored.
		{[]string{"--scenario", "long-streams", "--quick"}, "--quick does not apply to --scenario long-streams"},
		{[]string{"--scenario", "long-streams", "--streams", "5"}, "--streams does not apply"},
		{[]string{"--http2"}, "--http2 does not apply to --scenario client"},
		{[]string{"--in-flight", "5"}, "--in-flight does not apply"},
	} {
		app = newTestApp(nil)
		if code := app.cli(append([]string{"bench"}, bad.args...)...); code != 2 || !strings.Contains(app.err.String(), bad.want) {
			t.Errorf("bench %v: exit %d, want 2 and %q in: %s", bad.args, code, bad.want, app.err.String())
		}
	}
}
