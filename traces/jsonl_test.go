package traces

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func ptrF(f float64) *float64 { return &f }
func ptrI(i int64) *int64     { return &i }

func TestReadValid(t *testing.T) {
	in := "\xef\xbb\xbf# llmbench trace v1\n" +
		`{"id":"a","arrival_s":1.5,"input_tokens":10,"output_tokens":3,"class":"chat"}` + "\n" +
		"\n   \n" +
		`  # an indented comment` + "\n" +
		`{"arrival_s":0.25,"input_tokens":4.0,"output_tokens":1,"prompt":"hi <there> & you"}` + "\r\n" +
		`{"id":"c","arrival_s":1.5,"input_tokens":7,"output_tokens":2,"messages":[{"role":"user","content":"x"}],"session":"s1","turn":1,"think_s":0.5,"hash_ids":[1,2,-3],"temperature":0,"seed":-42}` + "\n" +
		`{"id":"d","arrival_s":0.000000001,"input_tokens":1,"output_tokens":1}` // no final newline
	got, err := Read(strings.NewReader(in), "t.jsonl", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Request{
		{ID: "d", Arrival: 1, InputTokens: 1, OutputTokens: 1, Line: 8},
		{ID: "r6", Arrival: 250 * time.Millisecond, InputTokens: 4, OutputTokens: 1, Prompt: "hi <there> & you", Line: 6},
		{ID: "a", Arrival: 1500 * time.Millisecond, InputTokens: 10, OutputTokens: 3, Class: "chat", Line: 2},
		{ID: "c", Arrival: 1500 * time.Millisecond, InputTokens: 7, OutputTokens: 2,
			Messages: []Message{{Role: "user", Content: "x"}}, Session: "s1", Turn: 1, Think: 500 * time.Millisecond,
			HashIDs: []int64{1, 2, -3}, Temperature: ptrF(0), Seed: ptrI(-42), Line: 7},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestReadErrors(t *testing.T) {
	const ok = `{"arrival_s":0,"input_tokens":1,"output_tokens":1}` + "\n"
	cases := []struct {
		name, in, want string
		field          string
		line           int
	}{
		{"negative output", ok + `{"arrival_s":1,"input_tokens":5,"output_tokens":-3}`,
			"t.jsonl:2: output_tokens: must be an integer >= 1 (got -3)", "output_tokens", 2},
		{"zero input", `{"arrival_s":1,"input_tokens":0,"output_tokens":3}`,
			"t.jsonl:1: input_tokens: must be an integer >= 1 (got 0)", "input_tokens", 1},
		{"fractional tokens", `{"arrival_s":1,"input_tokens":2.5,"output_tokens":3}`,
			"t.jsonl:1: input_tokens: must be an integer >= 1 (got 2.5)", "input_tokens", 1},
		{"string tokens", `{"arrival_s":1,"input_tokens":"5","output_tokens":3}`,
			`t.jsonl:1: input_tokens: must be an integer >= 1 (got string "5")`, "input_tokens", 1},
		{"negative arrival", `{"arrival_s":-0.5,"input_tokens":5,"output_tokens":3}`,
			"t.jsonl:1: arrival_s: must be a number of seconds >= 0 (got -0.5)", "arrival_s", 1},
		{"null arrival", `{"arrival_s":null,"input_tokens":5,"output_tokens":3}`,
			"t.jsonl:1: arrival_s: must be a number of seconds >= 0 (got null)", "arrival_s", 1},
		{"huge arrival", `{"arrival_s":1e300,"input_tokens":5,"output_tokens":3}`,
			"t.jsonl:1: arrival_s: must be a number of seconds >= 0 (got 1e300)", "arrival_s", 1},
		{"missing arrival", `{"input_tokens":5,"output_tokens":3}`,
			"t.jsonl:1: arrival_s: missing (required: a number of seconds >= 0)", "arrival_s", 1},
		{"missing output", ok + ok + `{"arrival_s":1,"input_tokens":5}`,
			"t.jsonl:3: output_tokens: missing (required: an integer >= 1)", "output_tokens", 3},
		{"unknown field", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"outptu":1}`,
			"t.jsonl:1: outptu: unknown field", "outptu", 1},
		{"duplicate key", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"input_tokens":6}`,
			"t.jsonl:1: input_tokens: appears more than once", "input_tokens", 1},
		{"empty id", `{"id":"","arrival_s":1,"input_tokens":5,"output_tokens":3}`,
			"t.jsonl:1: id: must be a non-empty string (got an empty string)", "id", 1},
		{"numeric id", `{"id":7,"arrival_s":1,"input_tokens":5,"output_tokens":3}`,
			"t.jsonl:1: id: must be a non-empty string (got 7)", "id", 1},
		{"duplicate id", `{"id":"x","arrival_s":1,"input_tokens":5,"output_tokens":3}` + "\n" + ok + `{"id":"x","arrival_s":0,"input_tokens":5,"output_tokens":3}`,
			`t.jsonl:3: id: duplicate id "x" (first used on line 1`, "id", 3},
		{"duplicate auto id", `{"id":"r2","arrival_s":1,"input_tokens":5,"output_tokens":3}` + "\n" + ok,
			`t.jsonl:2: id: duplicate id "r2" (first used on line 1; lines without an id get r<line>)`, "id", 2},
		{"bad hash id", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"hash_ids":[1,"b"]}`,
			`t.jsonl:1: hash_ids[1]: must be an integer (got string "b")`, "hash_ids[1]", 1},
		{"hash ids not array", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"hash_ids":5}`,
			"t.jsonl:1: hash_ids: must be an array of integers (got 5)", "hash_ids", 1},
		{"messages not array", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"messages":"hi"}`,
			`t.jsonl:1: messages: must be an array of {"role","content"} objects (got string "hi")`, "messages", 1},
		{"empty messages", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"messages":[]}`,
			"t.jsonl:1: messages: must hold at least one message", "messages", 1},
		{"message missing content", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"messages":[{"role":"user"}]}`,
			"t.jsonl:1: messages[0].content: missing (required: a string)", "messages[0].content", 1},
		{"message bad role", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"messages":[{"role":1,"content":"x"}]}`,
			"t.jsonl:1: messages[0].role: must be a non-empty string", "messages[0].role", 1},
		{"message extra field", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"messages":[{"role":"user","content":"x","name":"bob"}]}`,
			"t.jsonl:1: messages[0].name: unknown field", "messages[0].name", 1},
		{"prompt and messages", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"prompt":"a","messages":[{"role":"user","content":"x"}]}`,
			"t.jsonl:1: messages: cannot be combined with prompt", "messages", 1},
		{"turn without session", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"turn":2}`,
			"t.jsonl:1: turn: needs a session", "turn", 1},
		{"turn zero", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"session":"s","turn":0}`,
			"t.jsonl:1: turn: must be an integer >= 1 (got 0)", "turn", 1},
		{"duplicate turn", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"session":"s","turn":1}` + "\n" + `{"arrival_s":2,"input_tokens":5,"output_tokens":3,"session":"s","turn":1}`,
			`t.jsonl:2: turn: duplicate turn 1 of session "s" (first on line 1)`, "turn", 2},
		{"negative temperature", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"temperature":-1}`,
			"t.jsonl:1: temperature: must be a number >= 0 (got -1)", "temperature", 1},
		{"fractional seed", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"seed":1.5}`,
			"t.jsonl:1: seed: must be an integer (got 1.5)", "seed", 1},
		{"negative think", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"think_s":-2}`,
			"t.jsonl:1: think_s: must be a number of seconds >= 0 (got -2)", "think_s", 1},
		{"class number", `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"class":3}`,
			"t.jsonl:1: class: must be a string (got 3)", "class", 1},
		{"truncated last line", ok + `{"arrival_s":1,"input_tokens":5,"outp`,
			"t.jsonl:2: the last line is cut short", "", 2},
		{"incomplete line", `{"arrival_s":1,"input_tokens":5` + "\n" + ok,
			"t.jsonl:1: incomplete JSON object", "", 1},
		{"syntax", `{"arrival_s":1,,}`, "t.jsonl:1: invalid JSON at column", "", 1},
		{"array line", `[1,2]`, "t.jsonl:1: each line must be one JSON object {...} (got an array)", "", 1},
		{"trailing data", ok + `{"arrival_s":1,"input_tokens":5,"output_tokens":3} {}`,
			"t.jsonl:2: unexpected data after the JSON object", "", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.in), "t.jsonl", ReadOptions{})
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("error\n  %s\nwant prefix\n  %s", err, c.want)
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("error %T is not a *LineError", err)
			}
			if le.File != "t.jsonl" || le.Line != c.line || le.Field != c.field {
				t.Fatalf("LineError{File:%q Line:%d Field:%q}, want line %d field %q", le.File, le.Line, le.Field, c.line, c.field)
			}
		})
	}
}

func TestReadEmpty(t *testing.T) {
	_, err := Read(strings.NewReader("# only a comment\n\n"), "e.jsonl", ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "e.jsonl: no requests") {
		t.Fatalf("err = %v", err)
	}
}

func TestLenient(t *testing.T) {
	in := `{"arrival_s":1,"input_tokens":5,"output_tokens":3,"extra":{"a":1},"messages":[{"role":"user","content":"x","name":"bob"}]}`
	if _, err := Read(strings.NewReader(in), "t", ReadOptions{}); err == nil {
		t.Fatal("strict mode accepted unknown fields")
	}
	got, err := Read(strings.NewReader(in), "t", ReadOptions{Lenient: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Messages[0].Content != "x" {
		t.Fatalf("got %+v", got)
	}
	// Lenient does not excuse malformed known fields.
	_, err = Read(strings.NewReader(`{"arrival_s":1,"input_tokens":0,"output_tokens":3,"x":1}`), "t", ReadOptions{Lenient: true})
	if err == nil || !strings.Contains(err.Error(), "input_tokens") {
		t.Fatalf("err = %v", err)
	}
}

func TestCheckCollectsAll(t *testing.T) {
	in := `{"arrival_s":1,"input_tokens":0,"output_tokens":0}` + "\n" +
		`{"arrival_s":1,"input_tokens":1,"output_tokens":1}` + "\n" +
		`{"arrival_s":-1,"input_tokens":1,"output_tokens":1,"bogus":2}` + "\n"
	n, probs, err := Check(strings.NewReader(in), "c.jsonl", ReadOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, p := range probs {
		msgs = append(msgs, p.Error())
	}
	want := []string{
		"c.jsonl:1: input_tokens: must be an integer >= 1 (got 0)",
		"c.jsonl:1: output_tokens: must be an integer >= 1 (got 0)",
		"c.jsonl:3: arrival_s: must be a number of seconds >= 0 (got -1)",
		"c.jsonl:3: bogus: unknown field",
	}
	if n != 1 || len(msgs) != len(want) {
		t.Fatalf("n=%d problems:\n%s", n, strings.Join(msgs, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(msgs[i], want[i]) {
			t.Fatalf("problem %d = %q, want prefix %q", i, msgs[i], want[i])
		}
	}
	_, probs, _ = Check(strings.NewReader(in), "c.jsonl", ReadOptions{}, 2)
	if len(probs) != 2 {
		t.Fatalf("max=2 gave %d problems", len(probs))
	}
}

func TestArrivalPrecision(t *testing.T) {
	cases := map[string]time.Duration{
		"0":                 0,
		"12":                12 * time.Second,
		"0.1":               100 * time.Millisecond,
		"1.000000001":       time.Second + 1,
		"1.0000000015":      time.Second + 2, // rounds half up
		"1.0000000014999":   time.Second + 1,
		"123456.123456789":  123456*time.Second + 123456789,
		"1e-3":              time.Millisecond,
		"2.5E1":             25 * time.Second,
		"86400.000000000":   86400 * time.Second,
		"0.333333333333333": 333333333,
	}
	for text, want := range cases {
		in := `{"arrival_s":` + text + `,"input_tokens":1,"output_tokens":1}`
		got, err := Read(strings.NewReader(in), "p", ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if got[0].Arrival != want {
			t.Errorf("arrival_s %s -> %v, want %v", text, got[0].Arrival, want)
		}
	}
}

func sampleTrace() []Request {
	return []Request{
		{ID: "a", Arrival: 0, InputTokens: 100, OutputTokens: 20, Class: "chat"},
		{ID: "b", Arrival: 333333333, InputTokens: 1, OutputTokens: 1, Prompt: "line\nbreak \"quoted\" <b>&</b> é"},
		{ID: "c", Arrival: 2*time.Second + 1, InputTokens: 900, OutputTokens: 7, Class: "rag", HashIDs: []int64{5, 6, 1 << 40},
			Session: "s1", Turn: 3, Think: 1500 * time.Millisecond, Temperature: ptrF(0.7), Seed: ptrI(9),
			Messages: []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello"}}},
		{ID: "d", Arrival: 90 * 24 * time.Hour, InputTokens: 3, OutputTokens: 4},
	}
}

func clearLines(reqs []Request) []Request {
	for i := range reqs {
		reqs[i].Line = 0
	}
	return reqs
}

func TestJSONLRoundTrip(t *testing.T) {
	want := sampleTrace()
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(bytes.NewReader(buf.Bytes()), "rt", ReadOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if !reflect.DeepEqual(clearLines(got), want) {
		t.Fatalf("round trip\n got %+v\nwant %+v\n%s", got, want, buf.String())
	}
	first := strings.SplitN(buf.String(), "\n", 2)[0]
	if first != `{"id":"a","arrival_s":0,"class":"chat","input_tokens":100,"output_tokens":20}` {
		t.Fatalf("first line %s", first)
	}
	if !strings.Contains(buf.String(), `"arrival_s":0.333333333,`) || !strings.Contains(buf.String(), `<b>&</b>`) {
		t.Fatalf("unexpected encoding:\n%s", buf.String())
	}
}

func TestMsgpackRoundTrip(t *testing.T) {
	want := sampleTrace()[:3] // offsets below 25 days round-trip exactly through float64
	var buf bytes.Buffer
	if err := WriteMsgpack(&buf, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMsgpack(bytes.NewReader(buf.Bytes()), "rt.msgpack", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(clearLines(got), want) {
		t.Fatalf("round trip\n got %+v\nwant %+v", got, want)
	}
	// A cut-short file names the record.
	_, err = ReadMsgpack(bytes.NewReader(buf.Bytes()[:buf.Len()-3]), "rt.msgpack", ReadOptions{})
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(err.Error(), "cut short") {
		t.Fatalf("truncated: %v", err)
	}
	_, err = ReadMsgpack(strings.NewReader(`{"arrival_s":1}`), "x.msgpack", ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "x.msgpack: header: not a msgpack trace") {
		t.Fatalf("bad magic: %v", err)
	}
}

func BenchmarkReadJSONL(b *testing.B) {
	var reqs []Request
	for i := 0; i < 10000; i++ {
		reqs = append(reqs, Request{ID: fmt.Sprintf("q%d", i), Arrival: time.Duration(i) * 3 * time.Millisecond,
			InputTokens: 100 + i%4000, OutputTokens: 1 + i%500, Class: "chat", HashIDs: []int64{1, 2, int64(i)}})
	}
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, reqs); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	for b.Loop() {
		if _, err := Read(bytes.NewReader(buf.Bytes()), "bench", ReadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestMsgpackRejectsInvalidUTF8(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMsgpack(&buf, []Request{{ID: "a\xff", Arrival: 0, InputTokens: 1, OutputTokens: 1}}); err != nil {
		t.Fatal(err)
	}
	_, err := ReadMsgpack(&buf, "u.msgpack", ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "u.msgpack:1: id: must be a non-empty string (got a string that is not valid UTF-8)") {
		t.Fatalf("err = %v", err)
	}
}
