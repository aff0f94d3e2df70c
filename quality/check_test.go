package quality

import (
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

const weatherTools = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]},"when":{"type":"object","properties":{"day":{"type":"integer"}}}},"required":["city"]}}},{"type":"function","function":{"name":"get_time"}}]`

// graderFor reads one trace line with the given expect (and extra fields) and builds its grader.
func graderFor(t *testing.T, expect, extra string) *Grader {
	t.Helper()
	line := `{"id":"q","arrival_s":0,"input_tokens":1,"output_tokens":50,"messages":[{"role":"user","content":"x"}],"expect":` + expect + extra + "}"
	reqs, err := traces.Read(strings.NewReader(line), "t.jsonl", traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGrader(traces.FromSlice(reqs))
	if err != nil || g.Len() != 1 {
		t.Fatalf("grader: %v (%d)", err, g.Len())
	}
	return g
}

func call(name, args string) []metrics.ToolCall {
	return []metrics.ToolCall{{ID: "c1", Name: name, Arguments: args}}
}

// TestCheckKinds: every check kind, with outputs that pass and outputs that fail, and the
// failure reason each gives.
func TestCheckKinds(t *testing.T) {
	tools := "," + weatherTools
	cases := []struct {
		name, expect, extra string
		text                string
		calls               []metrics.ToolCall
		tokens              int
		want                string // grade
		note                string // part of the note
	}{
		{"exact pass", `[{"kind":"exact","value":"Paris"}]`, "", "  Paris\n", nil, 3, metrics.GradePass, ""},
		{"exact fail", `[{"kind":"exact","value":"Paris"}]`, "", "paris", nil, 3, metrics.GradeCheck, `output "paris" is not "Paris"`},
		{"contains all pass", `[{"kind":"contains","values":["red","blue"]}]`, "", "red and blue", nil, 3, metrics.GradePass, ""},
		{"contains all fail", `[{"kind":"contains","values":["red","blue"]}]`, "", "red only", nil, 3, metrics.GradeCheck, `"blue" does not occur`},
		{"contains any pass", `[{"kind":"contains","values":["red","blue"],"mode":"any"}]`, "", "blue", nil, 3, metrics.GradePass, ""},
		{"contains any fail", `[{"kind":"contains","values":["red","blue"],"mode":"any"}]`, "", "green", nil, 3, metrics.GradeCheck, "none of 2 values"},
		{"not_contains pass", `[{"kind":"not_contains","values":["sorry"]}]`, "", "sure", nil, 3, metrics.GradePass, ""},
		{"not_contains fail", `[{"kind":"not_contains","values":["sorry"]}]`, "", "I'm sorry", nil, 3, metrics.GradeCheck, `"sorry" occurs`},
		{"regex pass", `[{"kind":"regex","pattern":"^ORD-\\d{4}$"}]`, "", "ORD-1234", nil, 3, metrics.GradePass, ""},
		{"regex fail", `[{"kind":"regex","pattern":"^ORD-\\d{4}$"}]`, "", "ORD-12345", nil, 3, metrics.GradeCheck, "does not match"},
		{"json pass", `[{"kind":"json"}]`, "", `{"a":[1,2]}`, nil, 3, metrics.GradePass, ""},
		{"json fenced pass", `[{"kind":"json"}]`, "", "```json\n{\"a\":1}\n```", nil, 3, metrics.GradePass, ""},
		{"json fail", `[{"kind":"json"}]`, "", `{"a":`, nil, 3, metrics.GradeFormat, "not JSON"},
		{"json_schema pass", `[{"kind":"json_schema","schema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}]`, "", `{"n":3}`, nil, 3, metrics.GradePass, ""},
		{"json_schema invalid", `[{"kind":"json_schema","schema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}]`, "", `{"n":"3"}`, nil, 3, metrics.GradeCheck, "schema: at '/n'"},
		{"json_schema unparsable", `[{"kind":"json_schema","schema":{"type":"object"}}]`, "", `n=3`, nil, 3, metrics.GradeFormat, "not JSON"},
		{"number pass", `[{"kind":"number","value":1234.5,"tolerance":0.01}]`, "", "The total is 1,234.5 dollars", nil, 3, metrics.GradePass, ""},
		{"number negative", `[{"kind":"number","value":-3}]`, "", "x = -3", nil, 3, metrics.GradePass, ""},
		{"number fail", `[{"kind":"number","value":42}]`, "", "It is 41 or 42", nil, 3, metrics.GradeCheck, "first number 41 is not 42"},
		{"number none", `[{"kind":"number","value":42}]`, "", "forty-two", nil, 3, metrics.GradeCheck, "no number"},
		{"max_tokens pass", `[{"kind":"max_tokens_used","value":10}]`, "", "ok", nil, 10, metrics.GradePass, ""},
		{"max_tokens fail", `[{"kind":"max_tokens_used","value":10}]`, "", "ok", nil, 11, metrics.GradeCheck, "11 output tokens"},
		{"tool pass", `[{"kind":"tool_call","name":"get_weather","arguments":{"city":"Paris"}}]`, tools, "", call("get_weather", `{"city":"Paris","unit":"c"}`), 9, metrics.GradePass, ""},
		{"tool any pass", `[{"kind":"tool_call"}]`, tools, "", call("get_time", `{}`), 9, metrics.GradePass, ""},
		{"tool none", `[{"kind":"tool_call","name":"get_weather"}]`, tools, "It is sunny.", nil, 9, metrics.GradeTool, "no tool call"},
		{"tool wrong name", `[{"kind":"tool_call","name":"get_weather"}]`, tools, "", call("get_time", `{}`), 9, metrics.GradeTool, `called "get_time", want "get_weather"`},
		{"tool unknown", `[{"kind":"tool_call"}]`, tools, "", call("launch", `{}`), 9, metrics.GradeTool, `"launch" is not a function`},
		{"tool bad json", `[{"kind":"tool_call"}]`, tools, "", call("get_weather", `{"city":`), 9, metrics.GradeTool, "do not parse"},
		{"tool not object", `[{"kind":"tool_call"}]`, tools, "", call("get_weather", `["Paris"]`), 9, metrics.GradeTool, "not a JSON object"},
		{"tool schema", `[{"kind":"tool_call"}]`, tools, "", call("get_weather", `{"city":"Paris","unit":"k"}`), 9, metrics.GradeTool, "at '/unit'"},
		{"tool missing required", `[{"kind":"tool_call"}]`, tools, "", call("get_weather", `{"unit":"c"}`), 9, metrics.GradeTool, "missing property 'city'"},
		{"tool extra field", `[{"kind":"tool_call"}]`, tools, "", call("get_weather", `{"city":"Paris","zip":"75001"}`), 9, metrics.GradeTool, "does not declare: /zip"},
		{"tool nested extra", `[{"kind":"tool_call"}]`, tools, "", call("get_weather", `{"city":"Paris","when":{"day":1,"hour":3}}`), 9, metrics.GradeTool, "/when/hour"},
		{"tool wrong value", `[{"kind":"tool_call","arguments":{"city":"Paris"}}]`, tools, "", call("get_weather", `{"city":"Lyon"}`), 9, metrics.GradeTool, `argument "city" is "Lyon", want "Paris"`},
		{"tool number value", `[{"kind":"tool_call","arguments":{"when":{"day":2}}}]`, tools, "", call("get_weather", `{"city":"X","when":{"day":2.0}}`), 9, metrics.GradePass, ""},
		{"empty", `[{"kind":"contains","values":["x"]}]`, "", "   ", nil, 1, metrics.GradeEmpty, "no answer text"},
		{"first failing check decides", `[{"kind":"json"},{"kind":"contains","values":["zzz"]}]`, "", `{"a":1}`, nil, 3, metrics.GradeCheck, "expect[1] contains"},
	}
	for _, c := range cases {
		g := graderFor(t, c.expect, c.extra)
		r := metrics.Record{ID: "q", OutputText: c.text, ToolCalls: c.calls, OutputTokens: c.tokens}
		g.Grade(&r)
		if r.Grade != c.want || !strings.Contains(r.GradeNote, c.note) {
			t.Errorf("%s: grade %q note %q; want %q with %q", c.name, r.Grade, r.GradeNote, c.want, c.note)
		}
	}
}

func TestGradeRequestFailures(t *testing.T) {
	g := graderFor(t, `[{"kind":"contains","values":["x"]}]`, "")
	for _, c := range []struct {
		failure metrics.FailureKind
		want    string
	}{
		{metrics.FailTimeoutFirst, metrics.GradeTimeout},
		{metrics.FailTimeoutTotal, metrics.GradeTimeout},
		{metrics.FailHTTP5xx, metrics.GradeRequestFailed},
		{metrics.FailStreamBroken, metrics.GradeRequestFailed},
		{metrics.FailEmpty, metrics.GradeEmpty},
		{metrics.FailDropped, ""},
	} {
		r := metrics.Record{ID: "q", Failure: c.failure, OutputText: "x"}
		g.Grade(&r)
		if r.Grade != c.want {
			t.Errorf("%s: grade %q, want %q", c.failure, r.Grade, c.want)
		}
	}
	r := metrics.Record{ID: "other", OutputText: "x", Grade: "stale"}
	g.Grade(&r)
	if r.Grade != "" {
		t.Errorf("a request without checks got grade %q", r.Grade)
	}
	none, err := NewGrader(traces.FromSlice([]traces.Request{{ID: "a", InputTokens: 1, OutputTokens: 1}}))
	if err != nil || none != nil {
		t.Errorf("a trace without checks: %v, %v", none, err)
	}
}

// TestGradeConcurrently: the run's sink grades records from many goroutines at once (run
// with -race).
func TestGradeConcurrently(t *testing.T) {
	g := graderFor(t, `[{"kind":"json_schema","schema":{"type":"object","required":["a"]}},{"kind":"regex","pattern":"a"},{"kind":"tool_call"}]`, ","+weatherTools)
	done := make(chan string)
	for w := 0; w < 8; w++ {
		go func(w int) {
			grade := ""
			for i := 0; i < 200; i++ {
				r := metrics.Record{ID: "q", OutputText: `{"a":1}`, ToolCalls: call("get_weather", `{"city":"X"}`)}
				if (i+w)%2 == 1 {
					r.OutputText = `{"b":1}`
				}
				g.Grade(&r)
				if (i+w)%2 == 0 && r.Grade != metrics.GradePass || (i+w)%2 == 1 && r.Grade != metrics.GradeCheck {
					grade = r.Grade + " " + r.GradeNote
				}
			}
			done <- grade
		}(w)
	}
	for w := 0; w < 8; w++ {
		if bad := <-done; bad != "" {
			t.Errorf("wrong grade under concurrency: %s", bad)
		}
	}
}
