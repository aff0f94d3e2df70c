package reports

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmbench/llmbench/metrics"
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

// The most common messages of each failure kind are listed under the Requests line, most
// frequent kind first, cut to the width and stripped of control characters.
func TestTerminalFailureMessages(t *testing.T) {
	s := fixtureSummary("llama-3.1-8b", "")
	s.Requests.Failures = map[string]int{"http_4xx": 23, "timeout_idle": 2}
	s.Requests.FailureMessages = map[string][]metrics.MessageCount{
		"timeout_idle": {{Message: "no chunk for 60s", Count: 2}},
		"http_4xx": {{Message: "HTTP 400: the prompt has 5012 tokens, more than the 4096 of a slot \x1b[2J" + strings.Repeat(" and more", 20), Count: 20},
			{Message: "HTTP 401: invalid API key", Count: 3}},
	}
	var buf bytes.Buffer
	if err := WriteTerminal(&buf, s); err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "HTTP 401: invalid API key") || strings.ContainsRune(md.String(), '\x1b') {
		t.Errorf("Markdown lacks the messages or keeps a control character:\n%s", md.String())
	}
	lines := strings.Split(buf.String(), "\n")
	at := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "Requests") {
			at = i
		}
	}
	if at < 0 || at+3 >= len(lines) {
		t.Fatalf("no Requests line:\n%s", buf.String())
	}
	want := []string{"http_4xx ×20  HTTP 400: the prompt has 5012 tokens", "http_4xx ×3  HTTP 401: invalid API key", "timeout_idle ×2  no chunk for 60s"}
	for i, w := range want {
		l := lines[at+1+i]
		if !strings.HasPrefix(l, strings.Repeat(" ", 12)+w) {
			t.Errorf("line %d = %q, want it to start with %q", i+1, l, w)
		}
		if n := utf8.RuneCountInString(l); n > termWidth {
			t.Errorf("line %d has %d columns", i+1, n)
		}
		if strings.ContainsRune(l, '\x1b') {
			t.Errorf("control character in %q", l)
		}
	}
}
