package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// streamRecord runs the streaming path of api over body.
func streamRecord(t *testing.T, api, body string) *metrics.Record {
	t.Helper()
	c := &client{clock: newRealClock(), start: time.Now(), maxLine: DefaultMaxLineBytes}
	c.bufs.New = func() any { return &streamBufs{sr: newSSEReader(nil, 64)} }
	rec := &metrics.Record{ServerInputTokens: -1, ServerOutputTokens: -1, RequestedTokens: 8}
	resp := &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(body))}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	c.stream(ctx, cancel, resp, &call{api: api, chat: true, maxTokens: 8}, rec, &timers{})
	return rec
}

// TestAPIStreams reads each API's framing: text events are chunks, the lifecycle events are
// not, the usage is the count, the end event ends the stream, errors are server errors.
func TestAPIStreams(t *testing.T) {
	for _, tc := range []struct {
		name, api, body string
		fail            metrics.FailureKind
		chunks, in, out int
		inErr           string
	}{
		{"responses", "responses", respCreated + respDelta + respDelta + respDone, "", 2, 5, 2, ""},
		{"responses reasoning then text", "responses", respCreated +
			"data: {\"type\":\"response.reasoning_text.delta\",\"delta\":\"hm\"}\n\n" + respDelta + respDone, "", 2, 5, 2, ""},
		{"responses without end", "responses", respCreated + respDelta, metrics.FailStreamBroken, 1, -1, -1, "response.completed"},
		{"responses error event", "responses", respCreated + respDelta +
			"event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"boom\",\"param\":null}\n\n", metrics.FailServerError, 1, -1, -1, "boom"},
		{"responses failed", "responses", respDelta +
			"data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"x\",\"message\":\"died\"}}}\n\n", metrics.FailServerError, 1, -1, -1, "died"},
		{"responses no text", "responses", respCreated + respDone, metrics.FailEmpty, 0, 5, 2, ""},
		{"messages", "messages", msgStart + msgBlock + msgDelta + msgDelta + msgEnd, "", 2, 5, 2, ""},
		{"messages without stop", "messages", msgStart + msgBlock + msgDelta, metrics.FailStreamBroken, 1, 5, 1, "message_stop"},
		{"messages error event", "messages", msgStart + msgDelta +
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", metrics.FailServerError, 1, 5, 1, "Overloaded"},
		{"messages bad usage", "messages", msgStart + msgDelta +
			"data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":-4}}\n\ndata: {\"type\":\"message_stop\"}\n\n", "", 1, -1, -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := streamRecord(t, tc.api, tc.body)
			if r.Failure != tc.fail || len(r.Chunks) != tc.chunks || r.ServerInputTokens != tc.in || r.ServerOutputTokens != tc.out {
				t.Fatalf("failure %q (%s), %d chunks, server %d in / %d out; want %q, %d, %d / %d",
					r.Failure, r.Error, len(r.Chunks), r.ServerInputTokens, r.ServerOutputTokens, tc.fail, tc.chunks, tc.in, tc.out)
			}
			if !strings.Contains(r.Error, tc.inErr) {
				t.Errorf("error %q, want it to name %q", r.Error, tc.inErr)
			}
			if tc.fail == "" && tc.out > 0 && (r.OutputTokens != tc.out || r.TokenSource != metrics.TokensFromUsage) {
				t.Errorf("%d output tokens from %s, want %d from usage", r.OutputTokens, r.TokenSource, tc.out)
			}
		})
	}
}

// TestAPIWholeBodies reads the non-streamed bodies of Responses and Messages.
func TestAPIWholeBodies(t *testing.T) {
	for _, tc := range []struct {
		api, body string
		text      string
		reasoning int
		in, out   int64
		isError   bool
	}{
		{"responses", `{"id":"resp_1","object":"response","status":"incomplete","output":[{"type":"reasoning","content":[{"type":"reasoning_text","text":"hm"}]},{"type":"message","content":[{"type":"output_text","text":" a b"}]}],"usage":{"input_tokens":5,"output_tokens":3}}`, "hm a b", 2, 5, 3, false},
		{"responses", `{"id":"resp_1","status":"failed","error":{"code":"x","message":"m"},"output":[]}`, "", 0, -1, -1, true},
		{"messages", `{"id":"msg_1","type":"message","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":" a b"}],"stop_reason":"max_tokens","usage":{"input_tokens":5,"output_tokens":3}}`, "hm a b", 2, 5, 3, false},
		{"messages", `{"type":"error","error":{"type":"invalid_request_error","message":"no"}}`, "", 0, -1, -1, true},
	} {
		var f chunkFields
		if err := parseWhole(tc.api, []byte(tc.body), &f); err != nil {
			t.Fatalf("%s %s: %v", tc.api, tc.body, err)
		}
		if string(f.text) != tc.text || f.reasoningBytes != tc.reasoning || f.promptTokens != tc.in || f.completionTokens != tc.out || f.isError != tc.isError {
			t.Errorf("%s %s: text %q reasoning %d usage %d/%d error %v", tc.api, tc.body, f.text, f.reasoningBytes, f.promptTokens, f.completionTokens, f.isError)
		}
	}
}

// TestAPIBodies: each API's request body has its own shape, and images become its image parts.
func TestAPIBodies(t *testing.T) {
	c := &client{model: "m", target: Target{Stream: true}}
	msgs := []traces.Message{{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "What is this?", Images: []traces.Image{{Width: 8, Height: 4}}}}
	for _, tc := range []struct {
		api  string
		want []string
	}{
		{"", []string{`"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,`}},
		{"responses", []string{`"input":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"input_text","text":"What is this?"},{"type":"input_image","image_url":"data:image/jpeg;base64,`, `"max_output_tokens":5`, `"store":false`}},
		{"messages", []string{`"system":"Be brief."`, `"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"`, `"max_tokens":5`}},
	} {
		b, err := c.body(&call{api: tc.api, chat: true, messages: msgs, maxTokens: 5})
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(b) {
			t.Fatalf("%s: invalid JSON %s", tc.api, b)
		}
		for _, w := range tc.want {
			if !bytes.Contains(b, []byte(w)) {
				t.Errorf("%s body %.300s\nlacks %s", tc.api, b, w)
			}
		}
	}
	b, _ := c.body(&call{api: "embeddings", inputs: []string{"a", "b"}})
	if string(b) != `{"model":"m","input":["a","b"],"encoding_format":"float"}` {
		t.Errorf("embeddings body %s", b)
	}
	if _, err := c.body(&call{chat: true, messages: []traces.Message{{Role: "user", Images: []traces.Image{{Path: "/nonexistent/x.png"}}}}}); err == nil || !strings.Contains(err.Error(), "messages[0].images[0]") {
		t.Errorf("missing image file: %v", err)
	}
}

// TestSyntheticImage: the synthetic image is a JPEG of the asked size, the same bytes each time.
func TestSyntheticImage(t *testing.T) {
	a, err := syntheticImage(640, 480)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := syntheticImage(640, 480)
	if !bytes.Equal(a, b) || !bytes.HasPrefix(a, []byte("\xff\xd8")) {
		t.Fatalf("not a stable JPEG (%d bytes)", len(a))
	}
	if _, err := syntheticImage(0, 5); err == nil {
		t.Error("a 0-pixel image was made")
	}
}
