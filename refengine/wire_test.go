package refengine

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":"hello world","max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":3,"temperature":0.5,"seed":4}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"min_tokens":1,"max_tokens":2,"ignore_eos":true}`,
		`{"prompt":[1,2,3],"hash_ids":[1,2],"n":1}`,
		`{"prompt":["x"]}`, `{"prompt":null}`, `{"prompt":"\u00e9\ud800"}`, `[]`, `{`, ``, `{"max_tokens":1e400}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	lim := decodeLimits{servedModel: "m", maxModelLen: 64, defaultMaxTokens: 16}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		r, aerr := decodeRequest(body, chat, lim)
		if aerr != nil {
			if r != nil || aerr.status < 400 || aerr.message == "" {
				t.Fatalf("bad error %+v", aerr)
			}
			var eb errorBody
			if err := json.Unmarshal(appendErrorJSON(nil, aerr), &eb); err != nil || eb.Error.Message != aerr.message {
				t.Fatalf("error body does not round-trip: %v", err)
			}
			return
		}
		if r.promptTokens < 1 || r.maxTokens < 1 || r.promptTokens+r.maxTokens > lim.maxModelLen ||
			r.minTokens > r.maxTokens || r.temperature < 0 || r.temperature > 2 || r.chat != chat {
			t.Fatalf("accepted an invalid request: %+v", r)
		}
	})
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\`, "ctl\x00\x1f\n\t", "<script>&", "é日本", "bad\xff\xfe"} {
		var back string
		if err := json.Unmarshal(appendJSONString(nil, s), &back); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want, _ := json.Marshal(s)
		var w string
		json.Unmarshal(want, &w)
		if back != w {
			t.Fatalf("%q round-trips to %q, want %q", s, back, w)
		}
	}
}

// FuzzHandler drives the whole HTTP handler with arbitrary bodies: every answer is a 200 or an
// OpenAI-style 4xx error, and nothing panics.
func FuzzHandler(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hello world","max_tokens":5,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`,
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}`,
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}`,
		`{"prompt":[1,2,3],"hash_ids":[1,2],"max_tokens":2,"min_tokens":1,"ignore_eos":true,"seed":3,"temperature":0.5}`,
		`{"prompt":"x","max_tokens":-1}`, `nope`,
		// Answers (answer.go): a tool call, a JSON output, a lookup.
		`{"messages":[{"role":"user","content":"Get it.\n- a b: 2\n"}],"tools":[{"type":"function","function":{"name":"get_it","description":"Get it","parameters":{"type":"object","properties":{"aB":{"type":"integer"}},"required":["aB"]}}}],"max_tokens":9,"stream":true}`,
		`{"messages":[{"role":"user","content":"- total: 3\n"}],"response_format":{"type":"json_object"},"max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":"The key is K.\nWhat is the key?","max_tokens":8,"temperature":0}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	e, err := New(Config{Quality: DefaultQuality(), MaxModelLen: 256, Clock: NewVirtualClock(fixedNow()), Now: fixedNow, HashIDTokens: 16})
	if err != nil {
		f.Fatal(err)
	}
	defer e.Close()
	h := e.Handler()
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		path := "/v1/completions"
		if chat {
			path = "/v1/chat/completions"
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, bytes.NewReader(body)))
		switch {
		case rec.Code == 200:
		case rec.Code >= 400 && rec.Code < 500:
			var eb errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error.Message == "" {
				t.Fatalf("%d with a body that is not an OpenAI error: %q", rec.Code, rec.Body.Bytes())
			}
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body.Bytes())
		}
		if n := e.Panics(); n != 0 {
			t.Fatalf("%d panics recovered", n)
		}
	})
}
