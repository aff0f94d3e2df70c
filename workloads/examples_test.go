package workloads

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/traces"
)

var update = flag.Bool("update", false, "rewrite traces/examples/*.jsonl from their spec files")

const examplesDir = "../traces/examples"

// exampleTrace generates the trace of one example spec exactly as
// `llmbench gen --spec X.spec.json -o X.jsonl` does.
func exampleTrace(t *testing.T, specPath string) []byte {
	t.Helper()
	f, err := os.Open(specPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spec, err := ParseSpec(f, specPath)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := traces.WriteJSONL(&buf, reqs); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestExamplesRegenerate checks that every bundled example trace is exactly what its spec
// generates (run with -update to rewrite them after changing a spec or the generator).
func TestExamplesRegenerate(t *testing.T) {
	specs, err := filepath.Glob(filepath.Join(examplesDir, "*.spec.json"))
	if err != nil || len(specs) < 2 {
		t.Fatalf("example specs: %v %v", specs, err)
	}
	for _, sp := range specs {
		out := strings.TrimSuffix(sp, ".spec.json") + ".jsonl"
		got := exampleTrace(t, sp)
		if *update {
			if err := os.WriteFile(out, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("%v (run go test ./workloads -run TestExamplesRegenerate -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what %s generates; run go test ./workloads -run TestExamplesRegenerate -update", out, sp)
		}
	}
}

// TestExampleShapes pins what the issue asks of the examples.
func TestExampleShapes(t *testing.T) {
	read := func(name string) traces.Stats {
		reqs, err := traces.ReadFile(filepath.Join(examplesDir, name), traces.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return traces.ComputeStats(reqs)
	}
	if im := read("images-small.jsonl"); im.WithImages != im.Count || im.Images < im.Count || im.Images > 2*im.Count {
		t.Errorf("images-small: %d images in %d of %d requests", im.Images, im.WithImages, im.Count)
	}
	chat := read("chat-small.jsonl")
	if chat.Count < 80 || chat.Count > 120 || chat.DurationS < 17 || chat.DurationS > 20 ||
		chat.InputTokens.Min < 100 || chat.InputTokens.Max > 1500 || chat.OutputTokens.Min < 50 || chat.OutputTokens.Max > 400 ||
		chat.Classes["chat"] != chat.Count {
		t.Errorf("chat-small: %+v", chat)
	}
	mixed := read("mixed-small.jsonl")
	if mixed.Count < 100 || mixed.Count > 150 || mixed.DurationS < 17 || len(mixed.Classes) != 4 || mixed.OutputTokens.Max > 500 {
		t.Errorf("mixed-small: %+v", mixed)
	}
	for _, c := range []string{"rag", "summarization", "code", "reasoning"} {
		if mixed.Classes[c] < 15 {
			t.Errorf("mixed-small has only %d %s requests", mixed.Classes[c], c)
		}
	}
	if p := read("prefix-small.jsonl"); p.PrefixReuse < 0.5 {
		t.Errorf("prefix-small reuses only %.2f of its input tokens", p.PrefixReuse)
	}
	if s := read("sessions-small.jsonl"); s.Sessions < 5 || s.MaxTurn < 3 {
		t.Errorf("sessions-small: %d sessions, max turn %d", s.Sessions, s.MaxTurn)
	}
}
