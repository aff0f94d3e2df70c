package loadgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseChunk(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		text   string
		choice bool
		role   bool
		finish bool
		usage  bool
		pt, ct int64
		id     string
		isErr  bool
		errMsg string
		bad    bool
	}{
		{name: "completions", in: textChunk(" hi", -1), text: " hi", choice: true, pt: -1, ct: -1, id: "cmpl-1"},
		{name: "continuous usage", in: textChunk(" a b", 4), text: " a b", choice: true, usage: true, pt: 7, ct: 4, id: "cmpl-1"},
		{name: "chat delta", in: chatChunk("x\ny"), text: "x\ny", choice: true, pt: -1, ct: -1, id: "chatcmpl-1"},
		{name: "role prelude", in: `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, choice: true, role: true, pt: -1, ct: -1},
		{name: "role prelude null content", in: `{"choices":[{"delta":{"role":"assistant","content":null}}]}`, choice: true, role: true, pt: -1, ct: -1},
		{name: "reasoning", in: `{"choices":[{"delta":{"reasoning_content":"think","content":" ok"}}]}`, text: "think ok", choice: true, pt: -1, ct: -1},
		{name: "finish", in: `{"choices":[{"index":0,"text":"","finish_reason":"length","stop_reason":null}],"usage":null}`, choice: true, finish: true, pt: -1, ct: -1},
		{name: "final usage", in: usageChunk(12, 30), usage: true, pt: 12, ct: 30, id: "cmpl-1"},
		{name: "whole chat", in: `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`, text: "hello", choice: true, role: true, finish: true, usage: true, pt: 3, ct: 1, id: "c"},
		{name: "escapes", in: `{"choices":[{"text":"\"q\" \\ \/ \t \u00e9 \ud83d\ude00 \ud800x"}]}`, text: "\"q\" \\ / \t é 😀 \uFFFDx", choice: true, pt: -1, ct: -1},
		{name: "second choice ignored", in: `{"choices":[{"text":"a"},{"text":"b"}]}`, text: "a", choice: true, pt: -1, ct: -1},
		{name: "nested unknown", in: `{"x":{"y":[1,2,{"z":"}]"}]},"choices":[{"logprobs":{"tokens":["a"]},"text":"k"}],"n":-1.5e3,"t":true,"f":false}`, text: "k", choice: true, pt: -1, ct: -1},
		{name: "openai error", in: `{"error":{"message":"rate \"limited\"","type":"x","code":429}}`, isErr: true, errMsg: `rate "limited"`, pt: -1, ct: -1},
		{name: "vllm error", in: `{"object":"error","message":"bad thing","type":"BadRequestError","code":400}`, isErr: true, errMsg: "bad thing", pt: -1, ct: -1},
		{name: "string error", in: `{"error":"boom"}`, isErr: true, errMsg: "boom", pt: -1, ct: -1},
		{name: "empty object", in: `{}`, pt: -1, ct: -1},
		{name: "not json", in: `hello`, bad: true},
		{name: "truncated", in: `{"choices":[{"text":"abc"`, bad: true},
		{name: "trailing", in: `{} x`, bad: true},
		{name: "bad literal", in: `{"a":tru}`, bad: true},
		{name: "bad escape", in: `{"choices":[{"text":"\q"}]}`, bad: true},
		{name: "choices not array", in: `{"choices":{}}`, bad: true},
		{name: "usage not object", in: `{"usage":5}`, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f chunkFields
			_, err := parseChunk([]byte(tt.in), &f, nil)
			if tt.bad {
				if err == nil {
					t.Fatalf("parseChunk(%s) succeeded, want an error", tt.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseChunk(%s): %v", tt.in, err)
			}
			got := struct {
				text                       string
				choice, role, finish, usag bool
				pt, ct                     int64
				id                         string
				isErr                      bool
				errMsg                     string
			}{string(f.text), f.choice, f.role, f.finish, f.usage, f.promptTokens, f.completionTokens, string(f.id), f.isError, string(f.errMsg)}
			want := struct {
				text                       string
				choice, role, finish, usag bool
				pt, ct                     int64
				id                         string
				isErr                      bool
				errMsg                     string
			}{tt.text, tt.choice, tt.role, tt.finish, tt.usage, tt.pt, tt.ct, tt.id, tt.isErr, tt.errMsg}
			if got != want {
				t.Errorf("parseChunk(%s)\n got %+v\nwant %+v", tt.in, got, want)
			}
		})
	}
}

func TestSSEReader(t *testing.T) {
	in := ": keep-alive\n\nevent: message\ndata: a\ndata:b\r\n\r\nid: 3\nretry: 10\ndata: {\"x\":1}\n\nevent: error\ndata: oops\n\ndata: tail"
	sr := newSSEReader(strings.NewReader(in), 16)
	type ev struct{ data, event string }
	var got []ev
	for {
		d, e, err := sr.next()
		if err != nil {
			if err != io.ErrUnexpectedEOF {
				t.Fatalf("end: %v, want io.ErrUnexpectedEOF for a body cut inside a line", err)
			}
			break
		}
		got = append(got, ev{string(d), string(e)})
	}
	want := []ev{{"a\nb", "message"}, {`{"x":1}`, ""}, {"oops", "error"}}
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %q, want %q", i, got[i], want[i])
		}
	}
}

func TestSSEReaderEnds(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name   string
		in     string
		events int
		err    error
	}{
		{"clean", "data: 1\n\ndata: 2\n\n", 2, io.EOF},
		{"no final blank line", "data: 1\n\ndata: 2\n", 2, io.EOF},
		{"cut in line", "data: 1\n\ndata: 2", 1, io.ErrUnexpectedEOF},
		{"long line", "data: " + long + "\n\n", 1, io.EOF},
		{"unknown line is ignored", "data: 1\n\nhello world\n\n", 1, io.EOF},
		{"empty", "", 0, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sr := newSSEReader(strings.NewReader(tt.in), 16)
			n := 0
			for {
				d, _, err := sr.next()
				if err != nil {
					if !errors.Is(err, tt.err) {
						t.Fatalf("err %v, want %v", err, tt.err)
					}
					break
				}
				if tt.name == "long line" && string(d) != long {
					t.Fatalf("long line data %q", d)
				}
				n++
			}
			if n != tt.events {
				t.Errorf("%d events, want %d", n, tt.events)
			}
		})
	}
}

// TestParseChunkMatchesEncodingJSON checks the hand-rolled extraction against encoding/json on
// text with every kind of escape.
func TestParseChunkMatchesEncodingJSON(t *testing.T) {
	texts := []string{"", "plain", "<html>&amp;</html>", "tab\tnl\ncr\r", "quote\"back\\slash", "é 😀 \u2028", "\x00\x1f", string([]byte{0xff, 'a'})}
	for _, s := range texts {
		in := chatChunk(s)
		var f chunkFields
		if _, err := parseChunk([]byte(in), &f, nil); err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		want := s
		if !utf8.ValidString(s) {
			want = strings.ToValidUTF8(s, "\uFFFD")
		}
		if string(f.text) != want {
			t.Errorf("text %q, want %q", f.text, want)
		}
	}
}

func FuzzParseChunk(f *testing.F) {
	for _, s := range []string{textChunk(" a", 3), chatChunk("x\"y"), usageChunk(1, 2), `{"error":{"message":"m"}}`, `{"choices":[{"delta":{"role":"assistant"}}]}`, `{"a":[{"b":"\ud83d\ude00"}]}`, `{`, `[]`,
		`{"choices":[],"usage":{"completion_tokens":9223372036854775808,"prompt_tokens":1e+300}}`,
		`{"choices":[],"usage":{"completion_tokens":"12","completion_tokens_details":{"reasoning_tokens":-1.5}}}`,
		`{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f","arguments":"{\"a\""}}]}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":8}}}`,
		`{"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":"x"}},"timings":{"cache_n":1.5,"prompt_n":2}}`,
		`{"choices":[],"timings":{"cache_n":512,"prompt_n":88,"prompt_ms":10.5}}`, chatWholeCached,
		`{"choices":[],"timings":{"draft_n":12,"draft_n_accepted":"9"}}`, sglangWholeSpec, `{"meta_info":{"spec_verify_ct":-1,"spec_accept_token_num":[1]}}`} { // speculative (specfields.go)
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c chunkFields
		_, err := parseChunk(b, &c, nil)
		if err != nil {
			return
		}
		// Whatever parses as a chunk must be a JSON object to encoding/json too, and a text
		// field must come out as encoding/json reads it.
		var v map[string]json.RawMessage
		if json.Unmarshal(b, &v) != nil {
			if json.Valid(b) {
				t.Fatalf("accepted %q, which is valid JSON but not an object", b)
			}
			return // the hand-rolled scanner is more lenient than a validator inside skipped values
		}
		var w struct {
			Choices []struct {
				Text *string `json:"text"`
			} `json:"choices"`
		}
		if utf8.Valid(b) && json.Unmarshal(b, &w) == nil && len(w.Choices) > 0 && w.Choices[0].Text != nil {
			if !bytes.Contains(c.text, []byte(*w.Choices[0].Text)) {
				t.Fatalf("text %q, encoding/json says %q", c.text, *w.Choices[0].Text)
			}
		}
	})
}

func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{"data: 1\n\n", "data: [DONE]\n\n", ": c\n\ndata: a\ndata: b\n\n", "event: error\ndata: x\n\n", "garbage\n", "data: " + strings.Repeat("z", 40)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sr := newSSEReader(bytes.NewReader(b), 16)
		for i := 0; i <= len(b)+1; i++ {
			d, _, err := sr.next()
			if err != nil {
				return
			}
			if len(d) > len(b) {
				t.Fatalf("event data longer than the input")
			}
		}
		t.Fatalf("more events than input bytes")
	})
}
