package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/traces"
)

// TestGenProbes: gen writes each probe preset as a valid graded trace with the flags'
// arrivals, lengths and sweep, and refuses the flags that would do nothing.
func TestGenProbes(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args  []string
		n     int
		class string
	}{
		{[]string{"--preset", "long-context-probe", "--probe-lengths", "1k,2k", "--max-requests", "12"}, 12, "lc-2k/middle"},
		{[]string{"--preset", "tool-calling", "--rate", "4", "--duration", "5s"}, 0, "tool/retry"},
		{[]string{"--preset", "json-output", "--temperatures", "0,1", "--samples", "2", "--max-requests", "8"}, 8, "json-output/t=1"},
	} {
		out := filepath.Join(dir, tc.args[1]+".jsonl")
		app := newTestApp(nil)
		if code := app.cli(append([]string{"gen", "-o", out}, tc.args...)...); code != 0 {
			t.Fatalf("gen %v: exit %d: %s", tc.args, code, app.err.String())
		}
		reqs, err := traces.ReadFile(out, traces.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range reqs {
			found = found || r.Class == tc.class
			if len(r.Expect) == 0 || len(r.Messages) == 0 {
				t.Fatalf("%v: %s is not a graded chat request", tc.args, r.ID)
			}
		}
		if (tc.n > 0 && len(reqs) != tc.n) || !found {
			t.Errorf("gen %v: %d requests, class %s found %v", tc.args, len(reqs), tc.class, found)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--preset", "tool-calling", "--probe-lengths", "4k"}, "--probe-lengths"},
		{[]string{"--preset", "tool-calling", "--input", "fixed:3"}, "--input"},
		{[]string{"--preset", "chat", "--samples", "3"}, "--samples"},
		{[]string{"--preset", "json-output", "--temperatures", "0,3"}, "--temperatures"},
		{[]string{"--preset", "json-output", "--samples", "0"}, "--samples"},
	} {
		app := newTestApp(nil)
		if code := app.cli(append([]string{"gen", "-o", filepath.Join(dir, "x.jsonl")}, tc.args...)...); code != 2 || !strings.Contains(app.err.String(), tc.want) {
			t.Errorf("gen %v: exit %d, %q; want 2 naming %s", tc.args, code, app.err.String(), tc.want)
		}
	}
}
