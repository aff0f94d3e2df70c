package traces

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

const agenticTrace = `{"id":"plan","arrival_s":0,"input_tokens":100,"output_tokens":10,"session":"s1","turn":1,"affinity":"user-7"}
{"id":"a","arrival_s":1,"input_tokens":120,"output_tokens":10,"session":"s1","turn":2,"after":[1],"tool_delay_s":0.25}
{"id":"b","arrival_s":1,"input_tokens":130,"output_tokens":10,"session":"s1","turn":3,"after":["plan"],"tool_delay_s":0.5}
{"id":"join","arrival_s":2,"input_tokens":200,"output_tokens":10,"session":"s1","turn":4,"after":["a",3],"think_s":1}
{"id":"side","arrival_s":5,"input_tokens":50,"output_tokens":5,"session":"s1","turn":5,"after":[]}
{"id":"x","arrival_s":0,"input_tokens":50,"output_tokens":5,"session":"s2","turn":1}
{"id":"y","arrival_s":1,"input_tokens":50,"output_tokens":5,"session":"s2","turn":2}
`

func TestAgenticFieldsRead(t *testing.T) {
	reqs, err := Read(strings.NewReader(agenticTrace), "ag.jsonl", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Request{}
	for _, r := range reqs {
		by[r.ID] = r
	}
	if by["plan"].After != nil || by["plan"].Affinity != "user-7" {
		t.Errorf("plan: %+v", by["plan"])
	}
	if !reflect.DeepEqual(by["a"].After, []int{1}) || by["a"].ToolDelay != 250*time.Millisecond {
		t.Errorf("a: after %v tool %v", by["a"].After, by["a"].ToolDelay)
	}
	if !reflect.DeepEqual(by["b"].After, []int{1}) {
		t.Errorf("b: after %v (the id plan is turn 1)", by["b"].After)
	}
	if !reflect.DeepEqual(by["join"].After, []int{2, 3}) || by["join"].Think != time.Second {
		t.Errorf("join: after %v", by["join"].After)
	}
	if by["side"].After == nil || len(by["side"].After) != 0 {
		t.Errorf("side: after %#v, want an empty non-nil list", by["side"].After)
	}
	if by["y"].After != nil {
		t.Errorf("y: after %v, want nil (the previous turn)", by["y"].After)
	}
	for _, r := range reqs {
		if r.afterRefs != nil {
			t.Errorf("%s: afterRefs left unresolved", r.ID)
		}
	}

	// SessionDeps: positions in Turn order.
	var turns []*Request
	for i := range reqs {
		if reqs[i].Session == "s1" {
			turns = append(turns, &reqs[i])
		}
	}
	SortTurns(turns)
	deps, err := SessionDeps(turns)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{nil, {0}, {0}, {1, 2}, {}}
	if !reflect.DeepEqual(deps, want) {
		t.Errorf("deps %v, want %v", deps, want)
	}

	// Both encodings write the fields back and read them to the same requests.
	for _, enc := range []string{"jsonl", "msgpack"} {
		var buf bytes.Buffer
		var back []Request
		if enc == "jsonl" {
			if err := WriteJSONL(&buf, reqs); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), `"after":[2,3],"tool_delay_s"`) && !strings.Contains(buf.String(), `"after":[2,3]`) {
				t.Errorf("jsonl lacks the after list: %s", buf.String())
			}
			if !strings.Contains(buf.String(), `"after":[]`) {
				t.Errorf("jsonl lost the empty after list: %s", buf.String())
			}
			back, err = Read(&buf, "back.jsonl", ReadOptions{})
		} else {
			if err := WriteMsgpack(&buf, reqs); err != nil {
				t.Fatal(err)
			}
			back, err = ReadMsgpack(&buf, "back.msgpack", ReadOptions{})
		}
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		for i := range back {
			back[i].Line = reqs[i].Line
		}
		if !reflect.DeepEqual(back, reqs) {
			t.Errorf("%s round trip differs:\n%+v\n%+v", enc, back, reqs)
		}
	}
}

func TestAgenticFieldErrors(t *testing.T) {
	line := func(extra string) string {
		return `{"arrival_s":0,"input_tokens":5,"output_tokens":5` + extra + "}\n"
	}
	s1 := func(turn, extra string) string {
		return line(`,"session":"s1","turn":` + turn + extra)
	}
	cases := []struct{ name, trace, want string }{
		{"no session", line(`,"after":[1]`), "t.jsonl:1: after: needs a session"},
		{"not an array", s1("2", `,"after":1`), "t.jsonl:1: after: must be an array of turn numbers or ids"},
		{"bad entry", s1("2", `,"after":[0]`), "t.jsonl:1: after[0]: must be a turn number >= 1 or an id string (got 0)"},
		{"missing turn", s1("1", "") + s1("2", `,"after":[7]`), `t.jsonl:2: after[0]: no turn 7 in session "s1"`},
		{"missing id", s1("1", "") + s1("2", `,"after":["nope"]`), `t.jsonl:2: after[0]: no request has id "nope"`},
		{"other session", line(`,"id":"o","session":"s2","turn":1`) + s1("2", `,"after":["o"]`), `t.jsonl:2: after[0]: request "o" (line 1) is not a turn of session "s1"`},
		{"self", s1("2", `,"after":[2]`), "t.jsonl:1: after[0]: turn 2 cannot depend on itself"},
		{"cycle", s1("1", `,"after":[2]`) + s1("2", `,"after":[1]`), `t.jsonl:1: after: dependency cycle in session "s1": turn 1 -> turn 2 -> turn 1`},
		{"implicit cycle", s1("1", `,"after":[3]`) + s1("2", "") + s1("3", ""), `dependency cycle in session "s1"`},
		{"tool delay", s1("1", `,"tool_delay_s":-1`), "t.jsonl:1: tool_delay_s: must be a number of seconds >= 0 (got -1)"},
		{"affinity", s1("1", `,"affinity":""`), "t.jsonl:1: affinity: must be a non-empty string (got an empty string)"},
		{"affinity control", s1("1", `,"affinity":"a\nb"`), "t.jsonl:1: affinity: must not hold control characters"},
	}
	for _, c := range cases {
		_, err := Read(strings.NewReader(c.trace), "t.jsonl", ReadOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}
