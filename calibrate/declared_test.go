package calibrate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/racebuild"
	"github.com/llmbench/llmbench/refengine"
)

// TestDeclaredLimits: each backend's declaration is read from the fact its endpoint gives;
// an absent one declares nothing, and a malformed or absurd one is a note, never a limit.
func TestDeclaredLimits(t *testing.T) {
	for _, c := range []struct {
		name              string
		facts             map[string]string
		seqs, budget, len int
		bound             bool
		note              string // a substring of the one note expected ("" for none)
	}{
		{name: "llama.cpp", facts: map[string]string{"llamacpp.total_slots": "4", "llamacpp.slots.count": "4", "llamacpp.slots.n_ctx": "1024"}, seqs: 4, len: 1024},
		{name: "llama.cpp slots only", facts: map[string]string{"llamacpp.slots.count": "2", "llamacpp.default_generation_settings.n_ctx": "512"}, seqs: 2, len: 512},
		{name: "llama.cpp disagreeing", facts: map[string]string{"llamacpp.total_slots": "4", "llamacpp.slots.count": "3"}, seqs: 4, note: "but llama.cpp's slots"},
		{name: "sglang", facts: map[string]string{"sglang.max_running_requests": "48", "sglang.chunked_prefill_size": "8192", "sglang.context_length": "131072"},
			seqs: 48, budget: 8192, len: 131072},
		{name: "sglang default (null) then scheduler's", facts: map[string]string{"sglang.max_running_requests": "", "sglang.internal_states.0.max_running_requests": "2048"}, seqs: 2048},
		{name: "sglang chunking off", facts: map[string]string{"sglang.chunked_prefill_size": "-1"}, note: "below 16"},
		{name: "tgi 3", facts: map[string]string{"tgi.max_concurrent_requests": "128", "tgi.max_total_tokens": "4096"}, seqs: 128, bound: true, len: 4096},
		{name: "tgi 2 with max_batch_size", facts: map[string]string{"tgi.max_concurrent_requests": "128", "tgi.max_batch_size": "32"}, seqs: 32},
		{name: "vllm", facts: map[string]string{"models.m.max_model_len": "8192", "vllm.cache_config.num_gpu_blocks": "1000"}, len: 8192},
		{name: "reference engine over HTTP", facts: map[string]string{"server.engine": "llmbench-refengine", "server.max_num_seqs": "6", "server.max_num_batched_tokens": "512"}, seqs: 6, budget: 512},
		{name: "embedded reference engine", facts: map[string]string{"engine": "llmbench-refengine", "max_num_seqs": "256", "max_model_len": "131072"}, seqs: 256, len: 131072},
		{name: "another server's max_num_seqs", facts: map[string]string{"server.engine": "other", "server.max_num_seqs": "6"}},
		{name: "ollama", facts: map[string]string{"ollama.details.family": "llama"}},
		{name: "zero slots", facts: map[string]string{"llamacpp.total_slots": "0"}, note: "below 1"},
		{name: "a billion slots", facts: map[string]string{"llamacpp.total_slots": "1000000000"}, note: "above 1048576"},
		{name: "words", facts: map[string]string{"llamacpp.total_slots": "four"}, note: "not a number"},
		{name: "a fraction", facts: map[string]string{"sglang.max_running_requests": "2.5"}, note: "not a whole number"},
		{name: "NaN", facts: map[string]string{"tgi.max_concurrent_requests": "NaN"}, note: "not a number"},
		{name: "malformed then good", facts: map[string]string{"llamacpp.total_slots": "-4", "llamacpp.slots.count": "4"}, seqs: 4, note: "below 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := declaredLimits(c.facts)
			if d.seqs.n != c.seqs || d.seqs.bound != c.bound || d.budget.n != c.budget || d.maxLen.n != c.len {
				t.Errorf("seqs %d (bound %v) budget %d len %d; want %d (%v) %d %d", d.seqs.n, d.seqs.bound, d.budget.n, d.maxLen.n, c.seqs, c.bound, c.budget, c.len)
			}
			switch {
			case c.note == "" && len(d.notes) > 0:
				t.Errorf("notes %q, want none", d.notes)
			case c.note != "" && (len(d.notes) != 1 || !strings.Contains(d.notes[0], c.note)):
				t.Errorf("notes %q, want one saying %q", d.notes, c.note)
			}
		})
	}
}

// TestDeclaredOfRuns: runs whose servers agree give the limit; runs that disagree give a note
// and no limit; a run without facts does not count.
func TestDeclaredOfRuns(t *testing.T) {
	four := map[string]string{"llamacpp.total_slots": "4"}
	d := declaredOf([]map[string]string{four, nil, four}, []string{"a", "b", "c"})
	if d.seqs.n != 4 || len(d.notes) != 0 {
		t.Errorf("agreeing runs: %+v", d)
	}
	d = declaredOf([]map[string]string{four, {"llamacpp.total_slots": "8"}}, []string{"a", "b"})
	if d.seqs.n != 0 || len(d.notes) != 1 || !strings.Contains(d.notes[0], "different limits") {
		t.Errorf("disagreeing runs: %+v", d)
	}
}

// writeRunFacts writes a run.json whose run.engine is facts into dir.
func writeRunFacts(t *testing.T, dir string, facts map[string]string) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"schema": "llmbench.run/v1", "run": map[string]any{"engine": facts}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RunFactsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunFactsFiles: run.json is read, else summary.json; a records file finds its
// directory's; a corrupt file is an error naming it.
func TestRunFactsFiles(t *testing.T) {
	dir := t.TempDir()
	if f, err := runFacts(dir); f != nil || err != nil {
		t.Errorf("no files: %v %v", f, err)
	}
	os.WriteFile(filepath.Join(dir, SummaryFile), []byte(`{"run":{"engine":{"llamacpp.total_slots":"2"}}}`), 0o644)
	if f, err := runFacts(filepath.Join(dir, RecordsFile)); err != nil || f["llamacpp.total_slots"] != "2" {
		t.Errorf("summary.json through the records file: %v %v", f, err)
	}
	writeRunFacts(t, dir, map[string]string{"llamacpp.total_slots": "4"})
	if f, err := runFacts(dir); err != nil || f["llamacpp.total_slots"] != "4" {
		t.Errorf("run.json first: %v %v", f, err)
	}
	os.WriteFile(filepath.Join(dir, RunFactsFile), []byte("{\"run\":\x1b[2J"), 0o644)
	if _, err := runFacts(dir); err == nil || !strings.Contains(err.Error(), RunFactsFile) || strings.Contains(err.Error(), "\x1b") {
		t.Errorf("a corrupt run.json: %v", err)
	}
}

// FuzzDeclaredLimits: any run facts file gives limits within their bounds or an error, never
// a panic, and never a limit of 0 or beyond the bounds.
func FuzzDeclaredLimits(f *testing.F) {
	f.Add([]byte(`{"run":{"engine":{"llamacpp.total_slots":"4","llamacpp.slots.n_ctx":"1024"}}}`))
	f.Add([]byte(`{"run":{"engine":{"sglang.max_running_requests":null,"sglang.chunked_prefill_size":-1,"tgi.max_concurrent_requests":1e300}}}`))
	f.Add([]byte(`{"run":{"engine":{"engine.server.engine":"llmbench-refengine","server.max_num_seqs":"1e9"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		facts, err := parseRunFacts(data, "run.json")
		if err != nil {
			return
		}
		d := declaredLimits(facts)
		for _, c := range []struct {
			n, lo, hi int
		}{{d.seqs.n, 1, maxDeclaredCap}, {d.budget.n, minDeclaredBudget, maxDeclaredBudget}, {d.maxLen.n, 2, maxDeclaredLen}} {
			if c.n != 0 && (c.n < c.lo || c.n > c.hi) {
				t.Fatalf("limit %d outside [%d, %d]: %+v", c.n, c.lo, c.hi, d)
			}
		}
	})
}

// TestDeclaredCapInRun: the server's declaration sets the cap even at a load that never
// fills it (nothing to infer it from); a disagreeing run is noted and the declaration kept;
// an absurd declaration is a note and the inferred cap is used.
func TestDeclaredCapInRun(t *testing.T) {
	racebuild.Heavy(t)
	low := serveRun(t, hiddenServer(t), servedTrace(20, 0.05, 7), t.TempDir())
	high := serveRun(t, hiddenServer(t), servedTrace(60, 0.6, 2), t.TempDir())
	fit := func(dir string, facts map[string]string) *Result {
		t.Helper()
		writeRunFacts(t, dir, facts)
		res, err := Run(Options{Engine: refengine.Config{GPU: "h100", DisablePrefixCaching: true, Seed: 1}, Fit: []string{dir},
			MaxEvals: 60, FitMaxNumSeqs: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if r, _ := learnedCap([]run{mustLoad(t, low)}); r != 0 {
		t.Fatalf("the low run shows a cap of %d: it does not test a declaration alone", r)
	}
	res := fit(low, map[string]string{"llamacpp.total_slots": "4", "llamacpp.slots.n_ctx": "4096"})
	if res.MaxNumSeqs != 4 || res.CapSource != CapFromDeclared || !strings.Contains(res.CapDeclaredBy, "total_slots") || res.MaxModelLen != 4096 ||
		!strings.Contains(res.Table(), "declared: max-num-seqs 4 by the server: llama.cpp total_slots") {
		t.Errorf("declared 4 slots at low load: cap %d from %q (%q), max model len %d\n%s", res.MaxNumSeqs, res.CapSource, res.CapDeclaredBy, res.MaxModelLen, res.Table())
	}
	res = fit(high, map[string]string{"sglang.max_running_requests": "6"})
	if res.MaxNumSeqs != 6 || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "but the runs show 4") {
		t.Errorf("declared 6, queueing at 4: cap %d, notes %q", res.MaxNumSeqs, res.Notes)
	}
	res = fit(high, map[string]string{"llamacpp.total_slots": "1000000000"})
	if res.MaxNumSeqs != 4 || res.CapSource != CapFromQueue || len(res.Notes) != 2 || !strings.Contains(res.Notes[0], "not a server's setting") ||
		!strings.Contains(res.Table(), "note: ") {
		t.Errorf("an absurd declaration: cap %d from %q, notes %q", res.MaxNumSeqs, res.CapSource, res.Notes)
	}
	res = fit(high, map[string]string{"tgi.max_concurrent_requests": "128"})
	if res.MaxNumSeqs != 4 || res.CapSource != CapFromQueue {
		t.Errorf("TGI's bound of 128 over a cap of 4 the runs show: cap %d from %q, notes %q", res.MaxNumSeqs, res.CapSource, res.Notes)
	}
}

func mustLoad(t *testing.T, path string) run {
	t.Helper()
	r, err := load(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
