package main

import (
	"strings"
	"testing"
)

// TestEnergyFlagAudit: the energy flags refuse what they cannot do, naming the flag, before
// anything starts (issue 39).
func TestEnergyFlagAudit(t *testing.T) {
	tr := chatSmall
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"price without power", []string{"run", "--trace", tr, "--price-kwh", "0.2"}, "--price-kwh"},
		{"negative price", []string{"run", "--trace", tr, "--scrape-metrics", "--price-kwh", "-1"}, "--price-kwh"},
		{"exporter not http", []string{"run", "--trace", tr, "--power-metrics", "ftp://gpu:9400/metrics"}, "--power-metrics"},
		{"exporter without host", []string{"run", "--trace", tr, "--power-metrics", "gpu-node:9400"}, "--power-metrics"},
		{"ab exporter for engine arms", []string{"ab", "--trace", tr, "--a-power-metrics", "http://127.0.0.1:1/metrics"}, "--a-power-metrics"},
		{"ab exporter not http", []string{"ab", "--trace", tr, "--a-endpoint", "http://127.0.0.1:1", "--b-endpoint", "http://127.0.0.1:2", "--b-power-metrics", "ftp://gpu:9400/metrics"}, "--b-power-metrics"},
		{"sweep exporter on the virtual clock", []string{"sweep", "--trace", tr, "--slo", "ttft=1s", "--simulate", "--power-metrics", "http://127.0.0.1:1/metrics"}, "--power-metrics"},
		{"plan unknown objective", []string{"plan", "--trace", tr, "--slo", "ttft=1s", "--price-gpu-hour", "h100=2", "--objective", "speed"}, "tokens-per-joule"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			app := newTestApp(nil)
			if code := app.cli(c.args...); code == 0 {
				t.Fatalf("%v: exit 0, want an error naming %s", c.args, c.want)
			}
			if msg := app.err.String(); !strings.Contains(msg, c.want) {
				t.Errorf("%v: error %q does not name %s", c.args, msg, c.want)
			}
		})
	}
}
