package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestQualityFieldsRoundTrip: the quality fields read, write back (JSONL and msgpack) and read
// again to the same requests, as compact JSON.
func TestQualityFieldsRoundTrip(t *testing.T) {
	reqs, err := ReadFile("testdata/quality.jsonl", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q1 := reqs[0]
	if got := string(q1.ToolChoice); got != `"auto"` {
		t.Errorf("tool_choice = %s", got)
	}
	if tl := q1.ToolList(); len(tl) != 1 || tl[0].Name != "get_weather" || !strings.Contains(string(tl[0].Parameters), `"required":["city"]`) {
		t.Errorf("tool list = %+v", tl)
	}
	if len(q1.Expect) != 1 || q1.Expect[0].Kind != CheckToolCall || q1.Expect[0].Name != "get_weather" || string(q1.Expect[0].Arguments) != `{"city":"Paris"}` {
		t.Errorf("q1 expect = %+v", q1.Expect)
	}
	q3 := reqs[2]
	want := []Expectation{
		{Kind: CheckNumber, Value: json.RawMessage(`4`), Tolerance: 0.01},
		{Kind: CheckContains, Values: []string{"4", "four"}, Mode: "any"},
		{Kind: CheckNotContains, Values: []string{"5"}},
		{Kind: CheckRegex, Pattern: `^\s*\d+`},
		{Kind: CheckExact, Value: json.RawMessage(`"4"`)},
		{Kind: CheckMaxTokensUsed, Value: json.RawMessage(`8`)},
	}
	if !reflect.DeepEqual(q3.Expect, want) {
		t.Errorf("q3 expect:\n got %+v\nwant %+v", q3.Expect, want)
	}
	var jb, mb bytes.Buffer
	if err := WriteJSONL(&jb, reqs); err != nil {
		t.Fatal(err)
	}
	if err := WriteMsgpack(&mb, reqs); err != nil {
		t.Fatal(err)
	}
	fromJSON, err := Read(&jb, "w.jsonl", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fromMsgpack, err := ReadMsgpack(&mb, "w.msgpack", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		a, b, c := reqs[i], fromJSON[i], fromMsgpack[i]
		a.Line, b.Line, c.Line = 0, 0, 0
		if !reflect.DeepEqual(a, b) {
			t.Errorf("JSONL round trip of %s:\n got %+v\nwant %+v", a.ID, b, a)
		}
		if !reflect.DeepEqual(a, c) {
			t.Errorf("msgpack round trip of %s:\n got %+v\nwant %+v", a.ID, c, a)
		}
	}
}

func TestQualityFieldErrors(t *testing.T) {
	const chat = `"arrival_s":0,"input_tokens":1,"output_tokens":1,"messages":[{"role":"user","content":"x"}]`
	const tools = `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
	cases := []struct{ in, want string }{
		{`{` + chat + `,"expect":{}}`, `expect: must be an array of checks`},
		{`{` + chat + `,"expect":[]}`, `expect: must hold at least one check`},
		{`{` + chat + `,"expect":[{"kind":"fuzzy"}]}`, `expect[0].kind: must be one of exact, contains`},
		{`{` + chat + `,"expect":[{"value":"x"}]}`, `expect[0].kind: missing`},
		{`{` + chat + `,"expect":[{"kind":"exact"}]}`, `expect[0].value: missing (a exact check needs value)`},
		{`{` + chat + `,"expect":[{"kind":"exact","value":3}]}`, `expect[0].value: must be a string (got 3)`},
		{`{` + chat + `,"expect":[{"kind":"exact","value":"x","pattern":"y"}]}`, `expect[0].pattern: not a field of a exact check (it takes value)`},
		{`{` + chat + `,"expect":[{"kind":"json","values":["a"]}]}`, `expect[0].values: not a field of a json check (it takes no other field)`},
		{`{` + chat + `,"expect":[{"kind":"contains","values":[]}]}`, `expect[0].values: must be a non-empty array of strings`},
		{`{` + chat + `,"expect":[{"kind":"contains","values":["a"],"mode":"some"}]}`, `expect[0].mode: must be "all" or "any"`},
		{`{` + chat + `,"expect":[{"kind":"regex","pattern":"(?<=a)b"}]}`, `expect[0].pattern: is not a valid RE2 regular expression`},
		{`{` + chat + `,"expect":[{"kind":"json_schema","schema":{"type":"strin"}}]}`, `expect[0].schema: invalid schema`},
		{`{` + chat + `,"expect":[{"kind":"json_schema","schema":{"$ref":"https://example.com/s.json"}}]}`, `expect[0].schema: invalid schema: failing loading "https://example.com/s.json": schema refers to another document`},
		{`{` + chat + `,"expect":[{"kind":"number","value":"4"}]}`, `expect[0].value: must be a finite number`},
		{`{` + chat + `,"expect":[{"kind":"number","value":4,"tolerance":-1}]}`, `expect[0].tolerance: must be a number >= 0`},
		{`{` + chat + `,"expect":[{"kind":"max_tokens_used","value":0}]}`, `expect[0].value: must be an integer >= 1`},
		{`{` + chat + `,"expect":[{"kind":"tool_call"}]}`, `expect[0]: a tool_call check needs the request's tools`},
		{`{` + chat + `,` + tools + `,"expect":[{"kind":"tool_call","name":"g"}]}`, `expect[0].name: "g" is not a function of tools (f)`},
		{`{` + chat + `,` + tools + `,"expect":[{"kind":"tool_call","arguments":[1]}]}`, `expect[0].arguments: must be an object`},
		{`{"arrival_s":0,"input_tokens":1,"output_tokens":1,"prompt":"x",` + tools + `}`, `tools: needs messages`},
		{`{` + chat + `,"tools":[]}`, `tools: must hold at least one tool`},
		{`{` + chat + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":3}}}]}`, `tools[0].function.parameters: invalid schema`},
		{`{` + chat + `,"tools":[{"type":"fn","function":{"name":"f"}}]}`, `tools[0].type: must be "function"`},
		{`{` + chat + `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}`, `tools[1].function.name: duplicate tool name "f"`},
		{`{` + chat + `,"tools":[{"type":"function","function":{"description":"d"}}]}`, `tools[0].function.name: missing`},
		{`{` + chat + `,"tool_choice":"auto"}`, `tool_choice: needs tools`},
		{`{` + chat + `,` + tools + `,"tool_choice":"always"}`, `tool_choice: must be "none", "auto", "required"`},
		{`{` + chat + `,` + tools + `,"tool_choice":{"type":"function","function":{"name":"g"}}}`, `tool_choice.function.name: "g" is not a function of tools`},
		{`{` + chat + `,"response_format":{"type":"xml"}}`, `response_format.type: must be "text", "json_object" or "json_schema"`},
		{`{` + chat + `,"response_format":{"type":"json_schema"}}`, `response_format.json_schema: must be an object`},
		{`{` + chat + `,"response_format":{"type":"json_schema","json_schema":{"schema":{}}}}`, `response_format.json_schema.name: missing`},
		{`{"arrival_s":0,"input_tokens":1,"output_tokens":1,"prompt":"x","response_format":{"type":"json_object"}}`, `response_format: needs messages`},
	}
	for _, c := range cases {
		_, err := Read(strings.NewReader(c.in), "q.jsonl", ReadOptions{})
		var le *LineError
		if !errors.As(err, &le) || le.Line != 1 || !strings.Contains(err.Error(), "q.jsonl:1: "+c.want) {
			t.Errorf("%s:\n got %v\nwant q.jsonl:1: %s…", c.in, err, c.want)
		}
	}
}

// TestLenientDropsWhatItIgnores: a field --lenient ignores inside tools, a function,
// response_format or its json_schema is not kept either, so the trace written back reads
// without --lenient (FuzzRead found the function case).
func TestLenientDropsWhatItIgnores(t *testing.T) {
	in := `{"arrival_s":0,"input_tokens":5,"output_tokens":5,"messages":[{"role":"user","content":"hi"}],` +
		`"tools":[{"type":"function","x_tool":1,"function":{"name":"f","x_fn":true,"parameters":{"type":"object"}}}],` +
		`"response_format":{"type":"json_schema","x_rf":"a","json_schema":{"name":"n","x_js":[],"schema":{"type":"object"}}}}`
	if _, err := Read(strings.NewReader(in), "t", ReadOptions{}); err == nil {
		t.Fatal("unknown fields read without --lenient")
	}
	reqs, err := Read(strings.NewReader(in), "t", ReadOptions{Lenient: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{string(reqs[0].Tools), string(reqs[0].ResponseFormat)} {
		if strings.Contains(raw, "x_") {
			t.Errorf("an ignored field was kept: %s", raw)
		}
	}
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, reqs); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(&buf, "back", ReadOptions{}); err != nil {
		t.Fatalf("the trace written back: %v", err)
	}
}
