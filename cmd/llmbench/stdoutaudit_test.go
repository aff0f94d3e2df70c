package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/spf13/cobra"
)

// A machine format's stdout, by kind: one JSON value, CSV, Markdown or JSON lines.
const (
	outJSON     = "json"
	outCSV      = "csv"
	outMarkdown = "markdown"
	outJSONL    = "jsonl"
)

// stdoutRun is one invocation of a command in a machine format; exit lists the codes that end it
// normally (0 unless given: plan and a gate may exit 1 with a complete answer).
type stdoutRun struct {
	args []string
	kind string
	exit []int
}

// machineOutput reports whether c can write a machine format to stdout: a --format or --json
// flag, or an -o/--out whose default "-" is stdout. import's --format names its input format,
// but its -o - is a trace on stdout.
func machineOutput(c *cobra.Command) bool {
	if c.Flags().Lookup("json") != nil {
		return true
	}
	if f := c.Flags().Lookup("out"); f != nil && f.DefValue == "-" {
		return true
	}
	return c.Flags().Lookup("format") != nil && c.Name() != "import"
}

// TestMachineFormatsKeepStdoutClean: every command that writes a machine format (--format
// json|csv|markdown, --json, or a trace to stdout with -o -) writes only that format to stdout,
// its messages to stderr. Each such command must have runs in the table, so a new one cannot
// slip by: each run's stdout is parsed as its format. (ab's stdout is made clean on the branch
// that renames its --repeat; until that merges, its two rows fail here.)
func TestMachineFormatsKeepStdoutClean(t *testing.T) {
	dir := t.TempDir()
	a, b, db := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "h.db")
	for i, d := range []string{a, b} {
		mustRun(t, newTestApp(nil), "simulate", "--trace", chatSmall, "--engine-seed", fmt.Sprint(i+1), "--engine-noise", "realistic", "--out", d, "--quiet")
		mustRun(t, newTestApp(nil), "history", "add", d, "--db", db)
	}
	runs := map[string][]stdoutRun{
		"report":        {{args: []string{"report", a, "--format", "json"}, kind: outJSON}, {args: []string{"report", a, "--format", "csv"}, kind: outCSV}, {args: []string{"report", a, "--format", "markdown"}, kind: outMarkdown}},
		"compare":       {{args: []string{"compare", a, b, "--format", "json", "--html", filepath.Join(dir, "cmp.html")}, kind: outJSON}, {args: []string{"compare", a, b, "--format", "markdown", "--fail-on", "ttft.p95>+1%"}, kind: outMarkdown, exit: []int{0, exitRegression}}},
		"history check": {{args: []string{"history", "check", "--db", db, "--format", "json"}, kind: outJSON}, {args: []string{"history", "check", "--db", db, "--format", "markdown"}, kind: outMarkdown}},
		"plan": {{args: []string{"plan", "--trace", chatSmall, "--slo", "ttft=1s,tpot=50ms", "--gpus", "h100", "--tp", "1", "--replicas", "1..2",
			"--price-gpu-hour", "h100=2", "--format", "json", "-o", filepath.Join(dir, "plan.html")}, kind: outJSON, exit: []int{0, exitRegression}}},
		"ab": {{args: []string{"ab", "--trace", chatSmall, "--max-requests", "12", "--b-engine", "spec-k=4", "--time-scale", "10", "--runs", "1", "--warmup-requests", "0", "--out", filepath.Join(dir, "ab1"), "--format", "json"}, kind: outJSON},
			{args: []string{"ab", "--trace", chatSmall, "--max-requests", "12", "--b-engine", "spec-k=4", "--time-scale", "10", "--runs", "1", "--warmup-requests", "0", "--out", filepath.Join(dir, "ab2"), "--format", "markdown"}, kind: outMarkdown}},
		"bench":          {{args: []string{"bench", "--json", "--quick", "--runs", "1", "--ingest-tokens", "20000", "--streams", "50", "--dispatch-step", "100ms"}, kind: outJSON}},
		"trace stats":    {{args: []string{"trace", "stats", chatSmall, "--json"}, kind: outJSON}},
		"gen":            {{args: []string{"gen", "--preset", "chat", "--max-requests", "5"}, kind: outJSONL}},
		"import":         {{args: []string{"import", "--format", "mooncake", "--drop-failed", "../../traces/testdata/import/mooncake.jsonl"}, kind: outJSONL}},
		"trace scale":    {{args: []string{"trace", "scale", chatSmall, "--factor", "0.5"}, kind: outJSONL}},
		"trace slice":    {{args: []string{"trace", "slice", chatSmall, "--from", "1s", "--to", "5s"}, kind: outJSONL}},
		"trace sample":   {{args: []string{"trace", "sample", chatSmall, "--n", "5"}, kind: outJSONL}},
		"trace filter":   {{args: []string{"trace", "filter", chatSmall, "--class", "chat"}, kind: outJSONL}},
		"k8s job":        nil, // YAML manifest: checked against docs/distributed.md by TestK8sJobDocExampleIsRealOutput
		"history report": nil, // -o is an HTML file, required
	}
	root := newRootCmd(&newTestApp(nil).App)
	walkCommands(root, func(path string, c *cobra.Command) {
		if _, ok := runs[path]; !ok && machineOutput(c) {
			t.Errorf("%s writes a machine format to stdout but has no run in this test's table", path)
		}
	})
	for path, rs := range runs {
		for _, r := range rs {
			t.Run(path+" "+r.kind, func(t *testing.T) {
				app := newTestApp(nil)
				code := app.cli(r.args...)
				if !exitIn(code, r.exit) {
					t.Fatalf("%s: exit %d: %s", path, code, app.err.String())
				}
				if err := parseMachine(r.kind, []byte(app.out.String())); err != nil {
					t.Errorf("%s: stdout is not clean %s: %v\n%s", path, r.kind, err, app.out.String())
				}
			})
		}
	}
}

func exitIn(code int, ok []int) bool {
	if len(ok) == 0 {
		return code == 0
	}
	for _, c := range ok {
		if c == code {
			return true
		}
	}
	return false
}

// statusLine is how a message to the user begins ("results: DIR", "comparison report: FILE",
// "wrote FILE"): in Markdown on stdout it is a message that belongs on stderr.
var statusLine = regexp.MustCompile(`(?m)^(results|comparison report|plan report|report|store|added|rebuilt|wrote|ab|sweep|gen|import|trace|warning|note)\b[^|\n]*:? `)

// parseMachine checks that out is exactly one document of kind.
func parseMachine(kind string, out []byte) error {
	if len(bytes.TrimSpace(out)) == 0 {
		return fmt.Errorf("empty")
	}
	switch kind {
	case outJSON:
		dec := json.NewDecoder(bytes.NewReader(out))
		var v any
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if _, err := dec.Token(); err != io.EOF {
			return fmt.Errorf("more after the JSON value (offset %d)", dec.InputOffset())
		}
	case outCSV:
		recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
		if err != nil {
			return err
		}
		if len(recs) < 2 {
			return fmt.Errorf("%d CSV records", len(recs))
		}
	case outMarkdown:
		if m := statusLine.Find(out); m != nil {
			return fmt.Errorf("a status line on stdout: %q", m)
		}
	case outJSONL:
		for i, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
			if !json.Valid(l) {
				return fmt.Errorf("line %d is not JSON: %q", i+1, l)
			}
		}
	}
	return nil
}
