package traces

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestCancelAfterReadWrite: cancel_after_ms reads to the exact nanosecond, writes back the
// same in JSONL and msgpack, and is absent from requests that are not cancelled.
func TestCancelAfterReadWrite(t *testing.T) {
	in := `{"id":"a","arrival_s":0,"input_tokens":5,"output_tokens":50,"cancel_after_ms":1500}
{"id":"b","arrival_s":0.5,"input_tokens":5,"output_tokens":50,"cancel_after_ms":0.000001}
{"id":"c","arrival_s":1,"input_tokens":5,"output_tokens":50}
{"id":"d","arrival_s":2,"input_tokens":5,"output_tokens":50,"cancel_after_ms":2e3}
`
	reqs, err := Read(strings.NewReader(in), "t.jsonl", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{1500 * time.Millisecond, time.Nanosecond, 0, 2 * time.Second}
	for i, r := range reqs {
		if r.CancelAfter != want[i] {
			t.Errorf("%s: CancelAfter %v, want %v", r.ID, r.CancelAfter, want[i])
		}
	}
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, reqs); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, `"cancel_after_ms":1500}`) || !strings.Contains(out, `"cancel_after_ms":0.000001}`) || strings.Count(out, "cancel_after_ms") != 3 {
		t.Errorf("written trace:\n%s", out)
	}
	for _, enc := range []string{"jsonl", "msgpack"} {
		var b bytes.Buffer
		var back []Request
		if enc == "jsonl" {
			err = WriteJSONL(&b, reqs)
			if err == nil {
				back, err = Read(&b, "rt.jsonl", ReadOptions{})
			}
		} else {
			err = WriteMsgpack(&b, reqs)
			if err == nil {
				back, err = ReadMsgpack(&b, "rt.msgpack", ReadOptions{})
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		for i := range back {
			if back[i].CancelAfter != want[i] {
				t.Errorf("%s round trip %s: CancelAfter %v, want %v", enc, back[i].ID, back[i].CancelAfter, want[i])
			}
		}
	}
}

// TestCancelAfterBadInput: a value that is negative, zero, not a number or past the cap is an
// error naming the file, the line and the field.
func TestCancelAfterBadInput(t *testing.T) {
	for _, tc := range []struct{ val, want string }{
		{`-5`, "must be a number of milliseconds > 0"},
		{`0`, "must be a number of milliseconds > 0"},
		{`"200"`, `got string "200"`},
		{`null`, "got null"},
		{`[1]`, "got an array"},
		{`1e300`, "must be at most 31536000000 ms"},
	} {
		in := `{"arrival_s":0,"input_tokens":1,"output_tokens":1}` + "\n" +
			`{"arrival_s":1,"input_tokens":1,"output_tokens":1,"cancel_after_ms":` + tc.val + `}` + "\n"
		_, err := Read(strings.NewReader(in), "cancel.jsonl", ReadOptions{})
		var le *LineError
		if !errors.As(err, &le) || le.File != "cancel.jsonl" || le.Line != 2 || le.Field != "cancel_after_ms" {
			t.Fatalf("%s: error %v, want a LineError at cancel.jsonl:2 field cancel_after_ms", tc.val, err)
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "cancel.jsonl:2: cancel_after_ms") {
			t.Errorf("%s: error %q, want it to start with the place and say %q", tc.val, err, tc.want)
		}
	}
}
