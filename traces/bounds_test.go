package traces

import (
	"fmt"
	"strings"
	"testing"
)

// TestBoundsAreChecked: token counts and times past the documented caps are refused when the
// trace is read (so by trace validate and by every replay), naming file, line and field.
func TestBoundsAreChecked(t *testing.T) {
	tests := []struct{ line, want string }{
		{`{"arrival_s":0,"input_tokens":9223372036854775807,"output_tokens":4}`, "t.jsonl:1: input_tokens: must be at most 1048576"},
		{`{"arrival_s":0,"input_tokens":4,"output_tokens":10000000}`, "t.jsonl:1: output_tokens: must be at most 1048576"},
		{`{"arrival_s":9e9,"input_tokens":4,"output_tokens":4}`, "t.jsonl:1: arrival_s: must be at most 31536000"},
		{`{"arrival_s":0,"input_tokens":4,"output_tokens":4,"session":"s","turn":1,"think_s":8e9}`, "t.jsonl:1: think_s: must be at most 31536000"},
		{`{"arrival_s":0,"input_tokens":4,"output_tokens":4,"turn":99999999999,"session":"s"}`, "t.jsonl:1: turn: must be at most"},
		{"{\"id\":\"a\\u001b[2Jb\",\"arrival_s\":0,\"input_tokens\":4,\"output_tokens\":4}", "t.jsonl:1: id: must not hold control characters"},
		{`{"id":"` + strings.Repeat("i", 2000) + `","arrival_s":0,"input_tokens":4,"output_tokens":4}`, "t.jsonl:1: id: must be at most 1024 bytes"},
	}
	for _, tt := range tests {
		_, err := Read(strings.NewReader(tt.line+"\n"), "t.jsonl", ReadOptions{})
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%.80s: error %v, want prefix %q", tt.line, err, tt.want)
		}
	}
	// At the caps themselves the trace is fine.
	ok := fmt.Sprintf(`{"arrival_s":%d,"input_tokens":%d,"output_tokens":%d}`, MaxSeconds, MaxTokens, MaxTokens)
	if _, err := Read(strings.NewReader(ok), "t.jsonl", ReadOptions{}); err != nil {
		t.Errorf("at the caps: %v", err)
	}
}

// TestErrorTextIsBounded: an error quoting input is short and has no raw control characters,
// however long or strange the input.
func TestErrorTextIsBounded(t *testing.T) {
	bigKey := strings.Repeat("k", 2<<20) + "\x1b[31m"
	bigID := strings.Repeat("d", 900) + "\\u001b"
	lines := []string{
		`{"` + bigKey + `":1,"arrival_s":0,"input_tokens":4,"output_tokens":4}`,
		`{"id":"` + bigID + `","arrival_s":0,"input_tokens":4,"output_tokens":4}` + "\n" + `{"id":"` + bigID + `","arrival_s":0,"input_tokens":4,"output_tokens":4}`,
		"{\"id\":\"x\",\"arrival_s\":\"" + strings.Repeat("\x1b", 100) + "\",\"input_tokens\":4,\"output_tokens\":4}",
	}
	for i, l := range lines {
		_, err := Read(strings.NewReader(l), "t.jsonl", ReadOptions{})
		if err == nil {
			t.Fatalf("line %d: no error", i)
		}
		checkBounded(t, err.Error())
	}
	azure := "TIMESTAMP,ContextTokens,GeneratedTokens\n" + strings.Repeat("\x1b", 3<<20) + ",1,1\n"
	_, err := Import("azure", strings.NewReader(azure), "a.csv", ImportOptions{})
	if err == nil {
		t.Fatal("azure: no error")
	}
	checkBounded(t, err.Error())
}

func checkBounded(t *testing.T, msg string) {
	t.Helper()
	if len(msg) > 1500 {
		t.Errorf("error of %d bytes: %.200q", len(msg), msg)
	}
	if strings.ContainsAny(msg, "\x1b\x00\r\n") {
		t.Errorf("error holds a raw control character: %.200q", msg)
	}
}
