package refengine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/tokenizer"
)

// probeDoc is a document with order numbers at its start, middle and end and a question.
func probeDoc(fill int, ask string) string {
	var b strings.Builder
	b.WriteString("The order number for customer Okafor is ORD-11111. ")
	b.WriteString(tokenizer.Text(7, 0, fill))
	b.WriteString(". The order number for customer Lindqvist is ORD-22222. ")
	b.WriteString(tokenizer.Text(8, 0, fill))
	b.WriteString(". The order number for customer Abara is ORD-33333.\n")
	b.WriteString("What is the order number for customer " + ask + "? Answer with the order number.")
	return b.String()
}

const flightTools = `[{"type":"function","function":{"name":"searchFlights","description":"Search for flights between two airports.","parameters":{"type":"object","properties":{"origin":{"type":"string","description":"origin airport"},"destination":{"type":"string","description":"destination airport"},"passengers":{"type":"object","properties":{"adults":{"type":"integer","description":"adult passengers"},"children":{"type":"integer","description":"child passengers"}},"required":["adults"],"additionalProperties":false}},"required":["origin","destination","passengers"],"additionalProperties":false}}},
{"type":"function","function":{"name":"getWeather","description":"Get the weather forecast for a city.","parameters":{"type":"object","properties":{"city":{"type":"string","description":"city"}},"required":["city"]}}}]`

const flightTask = "Search for flights between two airports.\n- origin airport: SFO\n- destination airport: JFK\n- adult passengers: 2\n- child passengers: 1\n"

// sse reads an SSE body into its JSON events.
func sse(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("bad event %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

// assembled is a stream's output as a client assembles it, with a tokenizer count of
// every chunk's visible text.
type assembled struct {
	content, finish string
	names, args     []string
	ids             []string
	counted, usage  int
	firstTool       map[string]any
}

func assemble(t *testing.T, events []map[string]any) assembled {
	t.Helper()
	var a assembled
	var tok tokenizer.Reference
	for _, ev := range events {
		if u, ok := ev["usage"].(map[string]any); ok {
			a.usage = int(u["completion_tokens"].(float64))
		}
		choices, _ := ev["choices"].([]any)
		for _, c := range choices {
			ch := c.(map[string]any)
			if f, ok := ch["finish_reason"].(string); ok {
				a.finish = f
			}
			d, _ := ch["delta"].(map[string]any)
			for _, f := range []string{"reasoning_content", "reasoning"} {
				if s, ok := d[f].(string); ok {
					a.counted += tok.Count(s)
				}
			}
			if s, ok := d["content"].(string); ok {
				a.content += s
				a.counted += tok.Count(s)
			}
			tcs, _ := d["tool_calls"].([]any)
			for _, x := range tcs {
				tc := x.(map[string]any)
				i := int(tc["index"].(float64))
				for len(a.names) <= i {
					a.names, a.args, a.ids = append(a.names, ""), append(a.args, ""), append(a.ids, "")
				}
				if id, ok := tc["id"].(string); ok {
					a.ids[i] = id
					if a.firstTool == nil {
						a.firstTool = tc
					}
				}
				fn, _ := tc["function"].(map[string]any)
				if n, ok := fn["name"].(string); ok {
					a.names[i] += n
					a.counted += tok.Count(n)
				}
				if s, ok := fn["arguments"].(string); ok {
					a.args[i] += s
					a.counted += tok.Count(s)
				}
			}
		}
	}
	return a
}

func TestAnswerLookupNonStreaming(t *testing.T) {
	_, url := startEngine(t, Config{})
	body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": probeDoc(300, "Lindqvist")}},
		"max_tokens": 64, "temperature": 0})
	resp, out := post(t, url+"/v1/chat/completions", string(body))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	var r struct {
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			Completion int `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	got := r.Choices[0].Message.Content
	if got != "The order number for customer Lindqvist is ORD-22222." || r.Choices[0].FinishReason != "stop" {
		t.Fatalf("answer %q (%s)", got, r.Choices[0].FinishReason)
	}
	if n := (tokenizer.Reference{}).Count(got); n != r.Usage.Completion {
		t.Errorf("usage says %d tokens, the text has %d", r.Usage.Completion, n)
	}
}

// TestAnswerToolStreamVLLM: a tool call streams as vLLM streams it (first delta with id,
// type, index and the name; then argument fragments; finish_reason tool_calls), the
// arguments are the facts of the prompt in the schema's order, and every personality's chunks
// carry exactly as many tokens as the usage counts (continuous usage: chunk by chunk).
func TestAnswerToolStreamVLLM(t *testing.T) {
	for _, wire := range Wires {
		for _, spec := range []int{0, 3} {
			t.Run(fmt.Sprintf("%s/spec=%d", wire, spec), func(t *testing.T) {
				_, url := startEngine(t, Config{Wire: wire, SpecK: spec, TimeScale: 200})
				body := `{"messages":[{"role":"user","content":` + jsonString(flightTask) + `}],"tools":` + flightTools +
					`,"max_tokens":200,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`
				resp, out := post(t, url+"/v1/chat/completions", body)
				if resp.StatusCode != 200 {
					t.Fatalf("%d %s", resp.StatusCode, out)
				}
				a := assemble(t, sse(t, out))
				if len(a.names) != 1 || a.names[0] != "searchFlights" || a.finish != "tool_calls" {
					t.Fatalf("calls %q, finish %q", a.names, a.finish)
				}
				want := `{"origin": "SFO", "destination": "JFK", "passengers": {"adults": 2, "children": 1}}`
				if a.args[0] != want {
					t.Errorf("arguments %s, want %s", a.args[0], want)
				}
				if !strings.HasPrefix(a.ids[0], "chatcmpl-tool-") || a.firstTool["type"] != "function" {
					t.Errorf("first tool delta %v", a.firstTool)
				}
				if a.content != "" || a.counted != a.usage {
					t.Errorf("content %q; chunks carry %d tokens, usage %d", a.content, a.counted, a.usage)
				}
			})
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestAnswerToolNonStreaming: the whole response holds the call in message.tool_calls.
func TestAnswerToolNonStreaming(t *testing.T) {
	_, url := startEngine(t, Config{})
	body := `{"messages":[{"role":"user","content":"Get the weather forecast for a city.\n- city: Lisbon\n"}],"tools":` + flightTools + `,"max_tokens":50,"temperature":0}`
	resp, out := post(t, url+"/v1/chat/completions", body)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	var r struct {
		Choices []struct {
			Message struct {
				Content   *string
				ToolCalls []struct {
					ID       string
					Type     string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			Completion int `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	c := r.Choices[0]
	if c.Message.Content != nil || len(c.Message.ToolCalls) != 1 || c.FinishReason != "tool_calls" {
		t.Fatalf("%s", out)
	}
	fn := c.Message.ToolCalls[0].Function
	var tok tokenizer.Reference
	if fn.Name != "getWeather" || fn.Arguments != `{"city": "Lisbon"}` || tok.Count(fn.Name)+tok.Count(fn.Arguments) != r.Usage.Completion {
		t.Errorf("call %+v, %d tokens", fn, r.Usage.Completion)
	}
}

// TestAnswerJSON: json_schema answers fill the schema from the prompt; json_object without
// facts fills max_tokens with a valid object; both count exactly.
func TestAnswerJSON(t *testing.T) {
	_, url := startEngine(t, Config{})
	schema := `{"type":"json_schema","json_schema":{"name":"invoice","schema":{"type":"object","properties":{"invoiceNumber":{"type":"string","description":"invoice number"},"total":{"type":"number","description":"total"},"paid":{"type":"boolean","description":"paid"}},"required":["invoiceNumber","total","paid"]}}}`
	for _, tc := range []struct {
		name, content, format, want string
		max                         int
	}{
		{"schema", "Extract the invoice.\n- invoice number: INV-0042\n- total: 118.50\n- paid: yes\n", schema, `{"invoiceNumber": "INV-0042", "total": 118.50, "paid": true}`, 100},
		{"object", "Say something.", `{"type":"json_object"}`, "", 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"messages":[{"role":"user","content":` + jsonString(tc.content) + `}],"response_format":` + tc.format +
				fmt.Sprintf(`,"max_tokens":%d,"temperature":0,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`, tc.max)
			resp, out := post(t, url+"/v1/chat/completions", body)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, out)
			}
			a := assemble(t, sse(t, out))
			if !json.Valid([]byte(a.content)) || (tc.want != "" && a.content != tc.want) {
				t.Fatalf("content %q", a.content)
			}
			if a.counted != a.usage || (tc.want == "" && a.usage != tc.max) {
				t.Errorf("counted %d, usage %d (max %d)", a.counted, a.usage, tc.max)
			}
		})
	}
}

// TestAnswerTokenPieces: any split of an answer at token boundaries counts as the whole does,
// so chunk-by-chunk counting of streamed fragments is exact.
func TestAnswerTokenPieces(t *testing.T) {
	var tok tokenizer.Reference
	for _, s := range []string{`{"a": "x  y", "b": [1, 2.5, true], "c": {"d": "é\n\tz"}}`, "The order number is ORD-1.", " {\"k\": \"v\"}"} {
		ps := tok.Pieces(s)
		for i := range ps {
			if got := tok.Count(strings.Join(ps[:i], "")) + tok.Count(strings.Join(ps[i:], "")); got != len(ps) {
				t.Errorf("%q split at piece %d counts %d, want %d", s, i, got, len(ps))
			}
		}
	}
}

func TestBadStructuredFields(t *testing.T) {
	_, url := startEngine(t, Config{})
	for _, tc := range []struct{ body, param string }{
		{`{"messages":[{"role":"user","content":"x"}],"tools":{}}`, "tools"},
		{`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a b"}}]}`, "tools[0].function.name"},
		{`{"messages":[{"role":"user","content":"x"}],"tool_choice":"required"}`, "tool_choice"},
		{`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":{"type":"function","function":{"name":"b"}}}`, "tool_choice"},
		{`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}}`, "response_format.type"},
		{`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{}}}`, "response_format.json_schema.schema"},
		{`{"prompt":"x","tools":[{"type":"function","function":{"name":"a"}}]}`, "tools"},
	} {
		path := "/v1/chat/completions"
		if strings.HasPrefix(tc.body, `{"prompt"`) {
			path = "/v1/completions"
		}
		resp, out := post(t, url+path, tc.body)
		var e struct{ Error struct{ Param string } }
		json.Unmarshal(out, &e)
		if resp.StatusCode != 400 || e.Error.Param != tc.param {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.body, resp.StatusCode, out, tc.param)
		}
	}
}

func TestParseQuality(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want Quality
	}{
		{"off", Quality{}},
		{"", Quality{}},
		{"on", DefaultQuality()},
		{"tool=10%,int4=4,half=8k", func() Quality { q := DefaultQuality(); q.Tool, q.INT4, q.HalfContext = 0.1, 4, 8192; return q }()},
		{"on,seed=3", func() Quality { q := DefaultQuality(); q.Seed = 3; return q }()},
	} {
		got, err := ParseQuality(tc.spec)
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v %v", tc.spec, got, err)
		}
		if back, err := ParseQuality(got.String()); err != nil || back != got {
			t.Errorf("%q: String %q does not round-trip: %+v %v", tc.spec, got.String(), back, err)
		}
	}
	for _, bad := range []string{"tool", "tool=2", "int4=0.5", "nope=1", "tool=1%,tool=2%", "half=0"} {
		if _, err := ParseQuality(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// simProbe simulates n lookup requests (distinct documents, the asked fact at depth
// position 0, 1 or 2 of 3) and returns which were answered wrong.
func simProbe(t *testing.T, n, fill, pos int, cfg Config) []bool {
	t.Helper()
	names := []string{"Okafor", "Lindqvist", "Abara"}
	var reqs []SimRequest
	for i := 0; i < n; i++ {
		p := strings.Replace(probeDoc(fill, names[pos]), "ORD-", fmt.Sprintf("ORD-%d", i), 3)
		reqs = append(reqs, SimRequest{ID: fmt.Sprint("q", i), Prompt: p, MaxTokens: 64, Output: true})
	}
	res, err := Simulate(reqs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	wrong := make([]bool, n)
	for i, o := range res.Outputs {
		want := fmt.Sprintf("ORD-%d%d%d%d%d%d", i, pos+1, pos+1, pos+1, pos+1, pos+1)
		wrong[i] = !strings.Contains(o.Content, want+".")
		if o.FinishReason != "stop" || res.Timelines[i].OutputTokens != (tokenizer.Reference{}).Count(o.Content) {
			t.Fatalf("request %d: %q finish %s, %d tokens", i, o.Content, o.FinishReason, res.Timelines[i].OutputTokens)
		}
	}
	return wrong
}

func rate(w []bool) float64 {
	n := 0
	for _, x := range w {
		if x {
			n++
		}
	}
	return float64(n) / float64(len(w))
}

// TestErrorModel: over many seeded requests the lookup error follows the model: higher in the
// middle of a long document than at its edges, higher under INT4 than FP8 than BF16, errors
// nested (what BF16 gets wrong INT4 gets wrong), no errors when the model is off, and outputs
// byte-identical with speculative decoding on or off.
func TestErrorModel(t *testing.T) {
	const n = 400
	q := DefaultQuality()
	m := newErrorModel(q, "bf16", 1)
	edge, mid := simProbe(t, n, 3000, 0, Config{Quality: q, Seed: 1}), simProbe(t, n, 3000, 1, Config{Quality: q, Seed: 1})
	// Expected rates from the model (depth of the fact and prompt length), within 4 sigma.
	check := func(name string, got []bool, want float64) {
		t.Helper()
		sd := 4 * (want*(1-want)/n + 1e-4) // variance bound plus slack
		if d := rate(got) - want; d*d > sd {
			t.Errorf("%s: error rate %.3f, the model implies %.3f", name, rate(got), want)
		}
	}
	promptToks := (tokenizer.Reference{}).Count(probeDoc(3000, "Lindqvist"))
	check("middle", mid, m.recallBase(0.5, promptToks))
	if rate(mid) <= rate(edge)+0.02 {
		t.Errorf("lost in the middle: edge %.3f, middle %.3f", rate(edge), rate(mid))
	}
	bf := simProbe(t, n, 3000, 1, Config{Quality: q, Seed: 1, WeightDtype: "bf16"})
	fp := simProbe(t, n, 3000, 1, Config{Quality: q, Seed: 1, WeightDtype: "fp8"})
	i4 := simProbe(t, n, 3000, 1, Config{Quality: q, Seed: 1, WeightDtype: "int4"})
	check("int4", i4, min(0.95, 3*m.recallBase(0.5, promptToks)))
	if !(rate(bf) < rate(fp) && rate(fp) < rate(i4)) {
		t.Errorf("bf16 %.3f, fp8 %.3f, int4 %.3f: want increasing", rate(bf), rate(fp), rate(i4))
	}
	for i := range bf {
		if bf[i] && !i4[i] {
			t.Fatalf("request %d wrong on bf16, right on int4: errors must be nested", i)
		}
	}
	if off := simProbe(t, 100, 3000, 1, Config{Seed: 1, WeightDtype: "int4"}); rate(off) != 0 {
		t.Errorf("quality off: error rate %.3f", rate(off))
	}
	spec := simProbe(t, n, 3000, 1, Config{Quality: q, Seed: 1, SpecK: 4})
	for i := range spec {
		if spec[i] != bf[i] {
			t.Fatalf("request %d: speculative decoding changed the answer", i)
		}
	}
}

// TestAnswerEdges: answers after reasoning (in each personality's reasoning field, or as
// content) and answers cut by max_tokens still stream exactly the tokens they count, with
// vLLM's finish reasons.
func TestAnswerEdges(t *testing.T) {
	toolBody := func(max int) string {
		return `{"messages":[{"role":"user","content":` + jsonString(flightTask) + `}],"tools":` + flightTools +
			fmt.Sprintf(`,"max_tokens":%d,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`, max)
	}
	for _, tc := range []struct {
		name, wire   string
		reasoning    float64
		body         string
		finish, call string
	}{
		{"reasoning-vllm", "vllm", 0.5, toolBody(400), "tool_calls", "searchFlights"},
		{"reasoning-tgi", "tgi", 0.5, toolBody(400), "tool_calls", "searchFlights"},
		{"cut-after-name", "vllm", 0, toolBody(1), "tool_calls", "searchFlights"},
		{"cut-in-arguments", "sglang", 0, toolBody(9), "tool_calls", "searchFlights"},
		{"snake-name-per-token", "llamacpp", 0, `{"messages":[{"role":"user","content":"- forecast city: Oslo\n"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string","description":"forecast city"}}}}}],"tool_choice":"required","max_tokens":50,"temperature":0,"stream":true}`, "tool_calls", "get_weather"},
		{"snake-name-cut", "vllm", 0, `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"get_weather"}}],"tool_choice":{"type":"function","function":{"name":"get_weather"}},"max_tokens":2,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`, "tool_calls", "get_"},
		{"cut-lookup", "vllm", 0, `{"messages":[{"role":"user","content":` + jsonString(probeDoc(50, "Abara")) + `}],"max_tokens":4,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`, "length", ""},
		{"lookup-min-tokens", "vllm", 0, `{"messages":[{"role":"user","content":` + jsonString(probeDoc(50, "Abara")) + `}],"max_tokens":40,"min_tokens":30,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`, "stop", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := startEngine(t, Config{Wire: tc.wire, ReasoningFraction: tc.reasoning, TimeScale: 200})
			resp, out := post(t, url+"/v1/chat/completions", tc.body)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, out)
			}
			a := assemble(t, sse(t, out))
			if a.counted != a.usage || a.finish != tc.finish || (tc.call != "" && (len(a.names) != 1 || a.names[0] != tc.call)) {
				t.Fatalf("counted %d, usage %d, finish %q, calls %q, content %q", a.counted, a.usage, a.finish, a.names, a.content)
			}
			if tc.name == "lookup-min-tokens" && (a.usage != 30 || !strings.HasPrefix(a.content, "The order number for customer Abara is ORD-33333. ")) {
				t.Errorf("min_tokens 30: %d tokens, %q", a.usage, a.content)
			}
		})
	}
}
