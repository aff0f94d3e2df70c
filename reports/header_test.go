package reports

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// The header wraps between its parts: a long trace path is printed whole and the seeds after
// it are kept; a simulated run shows its engine seed, not a load seed it never had.
func TestTerminalHeaderWrapsAndNamesSeeds(t *testing.T) {
	long := "/home/someone/benchmarks/2026/november/production-traces/examples/mixed-traffic-with-a-long-name.jsonl"
	cases := []struct {
		name       string
		mode       string
		seed       int64
		engineSeed uint64
		want, not  []string
	}{
		{"embedded run", "open-loop", 3, 42, []string{"trace " + long, "seed 3", "engine seed 42"}, nil},
		{"endpoint run", "closed-loop", 1, 0, []string{"trace " + long, "seed 1"}, []string{"engine seed"}},
		{"simulated", "simulated", 0, 9, []string{"trace " + long, "engine seed 9"}, []string{"· seed 0", "seed 0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := fixtureSummary("llama-3.1-8b", "")
			s.Run.Trace, s.Run.Mode, s.Run.Seed, s.Run.EngineSeed = long, c.mode, c.seed, c.engineSeed
			var buf bytes.Buffer
			if err := WriteTerminal(&buf, s); err != nil {
				t.Fatal(err)
			}
			head := strings.SplitN(buf.String(), "\n\n", 2)[0]
			for _, w := range c.want {
				if !strings.Contains(head, w) {
					t.Errorf("header lacks %q:\n%s", w, head)
				}
			}
			for _, n := range c.not {
				if strings.Contains(head, n) {
					t.Errorf("header has %q:\n%s", n, head)
				}
			}
			if strings.Contains(head, "…") {
				t.Errorf("header was cut:\n%s", head)
			}
			for _, line := range strings.Split(head, "\n") {
				if n := utf8.RuneCountInString(line); n > termWidth && !strings.Contains(line, long) {
					t.Errorf("line of %d columns (> %d) that is not the long path: %q", n, termWidth, line)
				}
			}
		})
	}
}
