package traces

import (
	"bytes"
	"strings"
	"testing"
)

// The per-request model (issue 38) survives JSONL and msgpack, absent stays absent, and a
// bad value is an error naming file, line and field.
func TestModelRoundTrip(t *testing.T) {
	in := `{"id":"a","arrival_s":0,"input_tokens":5,"output_tokens":3,"model":"sql-lora"}
{"id":"b","arrival_s":1,"input_tokens":5,"output_tokens":3}
{"id":"c","arrival_s":2,"input_tokens":5,"output_tokens":3,"model":"org/Llama-3.1-8B"}
`
	reqs, err := Read(strings.NewReader(in), "t.jsonl", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"sql-lora", "", "org/Llama-3.1-8B"}
	check := func(what string, got []Request) {
		t.Helper()
		for i, r := range got {
			if r.Model != want[i] {
				t.Errorf("%s: request %s model %q, want %q", what, r.ID, r.Model, want[i])
			}
		}
	}
	check("jsonl read", reqs)
	var jb bytes.Buffer
	if err := WriteJSONL(&jb, reqs); err != nil {
		t.Fatal(err)
	}
	if strings.Count(jb.String(), `"model"`) != 2 {
		t.Errorf("written JSONL has %d model fields, want 2:\n%s", strings.Count(jb.String(), `"model"`), jb.String())
	}
	back, err := Read(&jb, "back.jsonl", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("jsonl round trip", back)
	var mb bytes.Buffer
	if err := WriteMsgpack(&mb, reqs); err != nil {
		t.Fatal(err)
	}
	mp, err := ReadMsgpack(&mb, "t.msgpack", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("msgpack round trip", mp)
}

func TestModelFieldErrors(t *testing.T) {
	for _, c := range []struct{ value, want string }{
		{`""`, `t.jsonl:1: model: must be a non-empty string`},
		{`7`, `t.jsonl:1: model: must be a non-empty string`},
		{`" base"`, `t.jsonl:1: model: must not start or end with spaces`},
		{`"a\u0001b"`, `t.jsonl:1: model: must not hold control characters`},
		{`"` + strings.Repeat("m", MaxModelBytes+1) + `"`, `t.jsonl:1: model: must be at most 256 bytes (got 257)`},
	} {
		line := `{"arrival_s":0,"input_tokens":5,"output_tokens":3,"model":` + c.value + "}\n"
		_, err := Read(strings.NewReader(line), "t.jsonl", ReadOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("model %s: error %v, want it to contain %q", c.value, err, c.want)
		}
	}
}

// With KeepModel the importers fill Model from the source; without it they leave it empty.
func TestImportKeepModel(t *testing.T) {
	for _, c := range []struct {
		format, file string
		opts         ImportOptions
		want         map[string]bool
	}{
		{"burstgpt", "burstgpt_v1.csv", ImportOptions{DropFailed: true}, map[string]bool{"ChatGPT": true, "GPT-4": true}},
		{"weka", "weka.jsonl", ImportOptions{}, map[string]bool{"claude-haiku-4-5-20251001": true, "claude-opus-4-5-20251101": true}},
	} {
		plain, err := importFile(t, c.format, c.file, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range plain {
			if r.Model != "" {
				t.Fatalf("%s without KeepModel: request %s has model %q", c.format, r.ID, r.Model)
			}
		}
		c.opts.KeepModel = true
		kept, err := importFile(t, c.format, c.file, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range kept {
			seen[r.Model] = true
		}
		for m := range c.want {
			if !seen[m] {
				t.Errorf("%s with KeepModel: no request of model %q (saw %v)", c.format, m, seen)
			}
		}
		if seen[""] {
			t.Errorf("%s with KeepModel: a request without a model", c.format)
		}
	}
}
