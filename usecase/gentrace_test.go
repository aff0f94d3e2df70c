package usecase

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// changedOf is a Changed that reports the given flag names.
func changedOf(names ...string) Changed {
	return func(n string) bool {
		for _, m := range names {
			if m == n {
				return true
			}
		}
		return false
	}
}

// The example trace is what gen writes from its spec file (traces/examples/README.md): Gen,
// called without cobra, reproduces it byte for byte on stdout.
func TestGenSpecFileReproducesExample(t *testing.T) {
	env, out, errb := testEnv()
	if err := Gen(env, &GenOptions{SpecFile: "../traces/examples/chat-small.spec.json", Out: "-", PrefixHitRate: -1}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../traces/examples/chat-small.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("gen --spec chat-small.spec.json wrote %d bytes, not the example's %d", out.Len(), len(want))
	}
	if !strings.HasPrefix(errb.String(), "gen: ") || !strings.Contains(errb.String(), " to stdout\n") {
		t.Errorf("stderr %q: want the gen: … to stdout line", errb.String())
	}
}

func TestGenRefusesFlagsOfTheOtherKind(t *testing.T) {
	for _, tc := range []struct {
		preset  string
		changed []string
		want    string
	}{
		{"json-output", []string{"cancel"}, "--cancel does not apply to the quality probe preset"},
		{"json-output", []string{"prefix-hit-rate"}, "--prefix-hit-rate shapes a workload spec"},
		{"json-output", []string{"models"}, "--models mixes models"},
		{"json-output", []string{"input"}, "--input shapes a spec's classes"},
		{"json-output", []string{"probe-lengths"}, "--probe-lengths sets the documents of --preset long-context-probe"},
		{"chat", []string{"samples"}, "--samples applies to the quality probe presets"},
		{"chat", []string{"print-spec", "out"}, "--print-spec prints the spec to stdout"},
	} {
		env, out, _ := testEnv()
		o := &GenOptions{Preset: tc.preset, Out: "-", PrintSpec: true, PrefixHitRate: -1, Changed: changedOf(tc.changed...)}
		err := Gen(env, o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s with %v: error %v, want %q", tc.preset, tc.changed, err, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%s with %v: wrote %q before refusing", tc.preset, tc.changed, out.String())
		}
	}
}

func TestImportRefusesAFlagOfAnotherFormat(t *testing.T) {
	env, _, _ := testEnv()
	err := Import(env, &ImportOptions{Format: "azure", In: "x.csv", TPOTMs: DefaultImportTPOTMs, Changed: changedOf("tokenizer")})
	if err == nil || err.Error() != "--tokenizer applies to --format sharegpt, not azure" {
		t.Errorf("error %v", err)
	}
}

// An import that skips rows lists them on stderr, counted by reason without the parenthesis.
func TestImportSkipsCountedByReason(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.jsonl")
	rows := `{"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}
not json
{"timestamp": 1000, "input_length": 20, "output_length": 6, "hash_ids": [1, 2]}
`
	if err := os.WriteFile(in, []byte(rows), 0o600); err != nil {
		t.Fatal(err)
	}
	env, out, errb := testEnv()
	o := &ImportOptions{Format: "mooncake", In: in, Out: filepath.Join(dir, "out.jsonl"), TPOTMs: DefaultImportTPOTMs}
	o.Import.SkipBad = true
	if err := Import(env, o); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q: the trace went to -o", out.String())
	}
	for _, want := range []string{"import: 2 requests over 1.0 s", "import: skipped 1 rows:\n", "first skipped rows:\n  " + in + ":2: "} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q lacks %q", errb.String(), want)
		}
	}
}

func TestTraceValidateStatus(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"id":"a","arrival_s":-1,"input_tokens":1,"output_tokens":1}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := "../traces/examples/chat-small.jsonl"
	env, out, _ := testEnv()
	if code, err := TraceValidate(env, &TraceValidateOptions{Paths: []string{good}, MaxErrors: 50}); code != ExitOK || err != nil {
		t.Errorf("good trace: %d, %v", code, err)
	}
	if !strings.HasPrefix(out.String(), good+": ok (") {
		t.Errorf("stdout %q", out.String())
	}
	code, err := TraceValidate(env, &TraceValidateOptions{Paths: []string{good, bad}, MaxErrors: 50})
	if code != ExitInvalidTrace || err == nil || err.Error() != "1 of 2 traces are invalid" {
		t.Errorf("bad trace: %d, %v", code, err)
	}
	if code, err := TraceValidate(env, &TraceValidateOptions{Paths: []string{filepath.Join(dir, "none.jsonl")}}); code != ExitBadInput || err == nil {
		t.Errorf("missing trace: %d, %v", code, err)
	}
}

// scale takes exactly one of --factor and --rate; the trace it writes keeps every request.
func TestTraceScale(t *testing.T) {
	env, out, _ := testEnv()
	in := TraceIO{In: "../traces/examples/chat-small.jsonl", Out: "-"}
	for _, c := range []Changed{nil, changedOf("factor", "rate")} {
		if err := TraceScale(env, &TraceScaleOptions{TraceIO: in, Factor: 2, Changed: c}); err == nil {
			t.Error("scale without exactly one of --factor and --rate was accepted")
		}
	}
	if err := TraceScale(env, &TraceScaleOptions{TraceIO: in, Factor: 2, Changed: changedOf("factor")}); err != nil {
		t.Fatal(err)
	}
	env2, stats, _ := testEnv()
	if err := TraceStats(env2, &TraceStatsOptions{Path: in.In, BlockTokens: DefaultBlockTokens}); err != nil {
		t.Fatal(err)
	}
	n := strings.Count(out.String(), "\n")
	if !strings.Contains(stats.String(), "requests        "+strconv.Itoa(n)+" over ") {
		t.Errorf("scaled trace has %d lines; stats of the input:\n%s", n, stats.String())
	}
}

// FuzzParseTokens: gen's --probe-lengths values never panic, and a count that parses is in
// [1, 1 Mi].
func FuzzParseTokens(f *testing.F) {
	for _, s := range []string{"4096", "4k", "32K", "0", "-1k", "1025k", "k", "9999999999999999999", "1.5k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseTokens(s)
		if err == nil && (n < 1 || n > 1<<20) {
			t.Errorf("parseTokens(%q) = %d", s, n)
		}
	})
}
