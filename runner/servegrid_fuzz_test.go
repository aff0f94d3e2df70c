package runner

import (
	"math"
	"strings"
	"testing"
)

// FuzzServeGrid: any --grid values and --serve-cmd template are either refused with an error
// or give configurations whose expanded commands carry the port and no placeholder of the
// grid.
func FuzzServeGrid(f *testing.F) {
	f.Add("seqs=1,2", "tp=1,2", "srv --port {port} --seqs {seqs} --tp {tp}", "{tp}")
	f.Add("seqs=1", "", "srv --port {port} --seqs {seqs} --cfg '{\"a\": 1}'", "2")
	f.Add("port=1", "x=", "{port}{port}", "{x}")
	f.Add("a=1,1", "b=c d", "{", "")
	f.Add("g=NaN,Inf", "", "s {port} {g}", "{g}")
	f.Fuzz(func(t *testing.T, g1, g2, tmpl, gpus string) {
		var specs []string
		for _, g := range []string{g1, g2} {
			if g != "" {
				specs = append(specs, g)
			}
		}
		grid, err := ParseGrid(specs)
		if err != nil {
			return
		}
		if err := CheckServeTemplate(tmpl, grid, gpus); err != nil {
			return
		}
		for _, c := range Configs(grid) {
			cmd := expand(tmpl, c, 54321)
			if !strings.Contains(cmd, "54321") {
				t.Fatalf("%q → %q: no port", tmpl, cmd)
			}
			for _, ax := range grid {
				if strings.Contains(cmd, "{"+ax.Key+"}") && !strings.Contains(c.Values[ax.Key], "{") {
					t.Fatalf("%q → %q: {%s} left", tmpl, cmd, ax.Key)
				}
			}
			if g, err := gpusFor(gpus, c.Values, grid); err != nil || !(g > 0) || math.IsInf(g, 0) {
				t.Fatalf("gpus %q for %v: %v %v", gpus, c.Values, g, err)
			}
		}
	})
}
