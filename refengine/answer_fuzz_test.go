package refengine

import (
	"encoding/json"
	"testing"

	"github.com/llmbench/llmbench/tokenizer"
)

// FuzzAnswer: for any chat body the engine accepts, its answer (tools, response_format,
// a lookup; the error model on, INT4) streams text that counts exactly as many tokens as it
// has, whatever the output length, and nothing panics.
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"Get the weather forecast for a city.\n- forecast city: Oslo\n"}],"tools":[{"type":"function","function":{"name":"getWeather","description":"Get the weather forecast for a city.","parameters":{"type":"object","properties":{"city":{"type":"string","description":"forecast city"},"days":{"type":"integer"}},"required":["city","days"]}}}]}`,
		`{"messages":[{"role":"user","content":"The code for box A is 7 7.\nWhat is the code for box A?"}]}`,
		`{"messages":[{"role":"user","content":"- total: 12.5\n- paid: yes\n"}],"response_format":{"type":"json_object"}}`,
		`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object","properties":{"a":{"type":"array","items":{"type":"number"},"description":"a"}},"required":["a"]}}}}`,
		`{"messages":[{"role":"user","content":"Step 1: a. Result of b: {\"id\": \"é\\u0000\"}"}],"tools":[{"function":{"name":"b","parameters":{"type":"object","properties":{"id":{"type":"string"}}}}}],"tool_choice":"required"}`,
	} {
		f.Add([]byte(s), uint16(7))
		f.Add([]byte(s), uint16(300))
	}
	lim := decodeLimits{servedModel: "m", maxModelLen: 1 << 16, defaultMaxTokens: 64}
	m := newErrorModel(DefaultQuality(), "int4", 1)
	var tok tokenizer.Reference
	f.Fuzz(func(t *testing.T, body []byte, n uint16) {
		r, aerr := decodeRequest(body, true, lim)
		if aerr != nil {
			return
		}
		p := &outPlan{base: 9}
		planAnswer(p, &answerInput{text: r.answerText(), chat: true, tools: r.tools, toolChoice: r.toolChoice, format: r.format,
			promptToks: r.promptTokens, maxTokens: r.maxTokens, temperature: r.temperature, key: 9}, m, 0)
		if p.ans == nil {
			return
		}
		for _, piece := range p.ans.toks {
			if piece == "" || tok.Count(piece) != 1 {
				t.Fatalf("answer token %q is not one token", piece)
			}
		}
		if p.ans.wrong == "" {
			// A right structured answer is valid JSON (a tool call's arguments, a JSON output).
			for _, c := range p.ans.calls {
				if args := appendTokens(nil, p.ans.toks, c.nameEnd, c.end); !json.Valid(args) {
					t.Fatalf("arguments %s are not JSON", args)
				}
			}
			if p.ans.kind == ansJSON && !json.Valid(appendTokens(nil, p.ans.toks, 0, len(p.ans.toks))) {
				t.Fatalf("JSON answer %q is not JSON", appendTokens(nil, p.ans.toks, 0, len(p.ans.toks)))
			}
		}
		total := p.target(int(n)+1, 0, false, int(n)+1)
		o := p.output(total, "length", true)
		got := tok.Count(o.Content)
		for _, c := range o.ToolCalls {
			got += tok.Count(c.Name) + tok.Count(c.Arguments)
		}
		if got != total {
			t.Fatalf("%d tokens generated, the output counts %d: %+v", total, got, o)
		}
	})
}

// FuzzParseQuality: a spec either fails with an error or round-trips through String.
func FuzzParseQuality(f *testing.F) {
	for _, s := range []string{"on", "off", "tool=5%,int4=3", "on,seed=7,half=8k", "middle=0.3,temp=0", "tool=", "x=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		q, err := ParseQuality(spec)
		if err != nil {
			return
		}
		back, err := ParseQuality(q.String())
		if err != nil || back != q || q.validate() != nil {
			t.Fatalf("%q → %q → %+v, %v", spec, q.String(), back, err)
		}
	})
}
