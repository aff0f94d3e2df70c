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
		for _, k := range []string{"lag_p99_ms", "arrival_error_p99_ms", "rss_per_stream_kb", "connections", "succeeded"} {
			if v, ok := p[k].(float64); !ok || v < 0 {
				t.Errorf("point %v: %s = %v", p["streams"], k, p[k])
			}
		}
	}
	app = newTestApp(nil)
	if code := app.cli("bench", "--scenario", "long-streams", "--http2", "--in-flight", "10", "--token-gap", "5ms", "--window", "100ms"); code != 0 {
		t.Fatalf("bench --http2: exit %d: %s", code, app.err.String())
	}
	if out := app.out.String(); !strings.Contains(out, "HTTP/2 (h2c)") || !strings.Contains(out, "rss_per_stream_kb") {
		t.Errorf("table:\n%s", out)
	}
	for _, bad := range [][]string{{"--scenario", "nope"}, {"--scenario", "long-streams", "--in-flight", "0"}, {"--scenario", "long-streams", "--source-addrs", "x"}} {
		app = newTestApp(nil)
		if code := app.cli(append([]string{"bench"}, bad...)...); code != 2 {
			t.Errorf("bench %v: exit %d, want 2 (%s)", bad, code, app.err.String())
		}
	}
}
