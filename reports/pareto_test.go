package reports

import (
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestParetoPage: the page draws the frontier without a script (inline SVG), greys the
// dominated points, lists every point and configuration in tables, escapes outside text, and
// is the same bytes for the same input.
func TestParetoPage(t *testing.T) {
	pts := []metrics.ParetoPoint{
		{Config: "seqs=4", Load: 1, PerGPU: 100, PerUser: 50},
		{Config: "seqs=4", Load: 2, PerGPU: 150, PerUser: 40},
		{Config: "seqs=8", Load: 2, PerGPU: 140, PerUser: 35},
		{Config: "seqs=8", Load: 4, PerGPU: 260, PerUser: 30},
	}
	metrics.MarkDominated(pts)
	p := &Pareto{SLO: "ttft<=1s", Target: 0.9, Points: pts, Configs: []ParetoConfig{
		{Name: "seqs=4", Command: "serve --max-num-seqs 4", GPUs: 1, Capacity: 2, Dir: "seqs-4", Log: "seqs-4/server.log"},
		{Name: "seqs=8", Command: "serve --max-num-seqs 8", GPUs: 1, Capacity: 4, Dir: "seqs-8", Log: "seqs-8/server.log"},
		{Name: "<b>seqs=16</b>", Command: "serve", Error: "server did not start: <exit 3>", Dir: "seqs-16", Log: "seqs-16/server.log"},
	}}
	var a, b strings.Builder
	if err := WriteParetoHTML(&a, p, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteParetoHTML(&b, p, HTMLOptions{}); err != nil || a.String() != b.String() {
		t.Fatalf("not deterministic (%v)", err)
	}
	page := a.String()
	for _, want := range []string{"<svg", "3 server configurations, 4 load points within the SLO, 3 on the frontier", "dominated", "#c4c7c5",
		"&lt;b&gt;seqs=16&lt;/b&gt;: server did not start: &lt;exit 3&gt;", "seqs-8/server.log", "260.0"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<b>seqs=16") {
		t.Error("configuration name not escaped")
	}
}
