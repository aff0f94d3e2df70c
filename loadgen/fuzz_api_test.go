package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/tokenizer"
)

// Seeds in each API's real framing (api.go cites the formats).
const (
	respCreated = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[],\"usage\":null}}\n\n"
	respDelta   = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":3,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\" a b\",\"logprobs\":[]}\n\n"
	respDone    = "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":9,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\" a b\"}]}],\"usage\":{\"input_tokens\":5,\"output_tokens\":2,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":7}}}\n\n"
	msgStart    = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n"
	msgBlock    = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	msgDelta    = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" a b\"}}\n\n"
	msgEnd      = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

// fuzzAPIStream feeds body to the streaming path of api and checks the record's consistency.
func fuzzAPIStream(t *testing.T, api string, body []byte) {
	for _, tok := range []tokenizer.Tokenizer{nil, tokenizer.Reference{}} {
		c := &client{tok: tok, clock: newRealClock(), start: time.Now(), maxLine: DefaultMaxLineBytes}
		c.bufs.New = func() any { return &streamBufs{sr: newSSEReader(nil, 64)} }
		rec := &metrics.Record{ServerInputTokens: -1, ServerOutputTokens: -1, RequestedTokens: 2}
		resp := &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(body))}
		ctx, cancel := context.WithCancelCause(context.Background())
		c.stream(ctx, cancel, resp, &call{api: api, chat: true, maxTokens: 2, keepText: true}, rec, &timers{})
		cancel(nil)
		checkStreamedRecord(t, rec)
	}
}

// FuzzResponsesStream: arbitrary bytes on the Responses streaming path never panic and leave
// a consistent record.
func FuzzResponsesStream(f *testing.F) {
	f.Add([]byte(respCreated + respDelta + respDone))
	f.Add([]byte(respCreated + respDelta + "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"boom\",\"param\":null}\n\n"))
	f.Add([]byte(respDelta + "data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"x\",\"message\":\"m\"}}}\n\n"))
	f.Add([]byte(respDelta + "data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"output_tokens\":-3}}}\n\n"))
	f.Add([]byte(respCreated + respDelta))
	f.Add([]byte(respCreated + respDelta + respDoneCached))
	f.Add([]byte(respCreated + "data: {\"type\":\"response.reasoning_text.delta\",\"item_id\":\"rs_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"hm\"}\n\n" +
		respDelta + "data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":2,\"output_tokens_details\":{\"reasoning_tokens\":3}}}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) { fuzzAPIStream(t, "responses", body) })
}

// FuzzMessagesStream: arbitrary bytes on the Anthropic Messages streaming path never panic and
// leave a consistent record.
func FuzzMessagesStream(f *testing.F) {
	f.Add([]byte(msgStart + msgBlock + msgDelta + msgEnd))
	f.Add([]byte(msgStartCached + msgBlock + msgDelta + msgEnd))
	f.Add([]byte(msgStart + msgDelta + "data: {\"type\":\"message_delta\",\"usage\":{\"input_tokens\":3,\"cache_read_input_tokens\":-1,\"cache_creation_input_tokens\":null,\"output_tokens\":1}}\n\n"))
	f.Add([]byte(msgStart + msgBlock + msgDelta + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"))
	f.Add([]byte(msgStart + "data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n" + msgDelta + msgEnd))
	f.Add([]byte(msgStart + msgDelta + "data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":1e400}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) { fuzzAPIStream(t, "messages", body) })
}

// FuzzEmbeddings: arbitrary bytes as an embeddings response never panic; a record that
// succeeds has one vector per input.
func FuzzEmbeddings(f *testing.F) {
	f.Add([]byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2]},{"object":"embedding","index":1,"embedding":"AAAA"}],"model":"m","usage":{"prompt_tokens":9,"total_tokens":9}}`))
	f.Add([]byte(`{"error":{"message":"bad","type":"invalid_request_error"}}`))
	f.Add([]byte(`{"data":[{"embedding":[]}],"usage":{"prompt_tokens":"x"}}`))
	f.Add([]byte(`{"object":"error","message":"m"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := &client{clock: newRealClock(), start: time.Now()}
		rec := &metrics.Record{ServerInputTokens: -1, ServerOutputTokens: -1}
		resp := &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(body))}
		c.embeddings(context.Background(), resp, &call{api: "embeddings", inputs: []string{"a", "b"}}, rec)
		var e embeddingFields
		if rec.OK() && (parseEmbeddings(body, &e) != nil || e.vectors != 2 || e.isError) {
			t.Fatalf("record ok for %q (%+v)", body, e)
		}
		if rec.ServerInputTokens < -1 || rec.ServerInputTokens > MaxUsageCount || rec.OutputTokens != 0 {
			t.Fatalf("record %+v", rec)
		}
	})
}

// BenchmarkParseAPIEvents decodes one text event of each new API with the hand-written
// readers, and the same event with encoding/json into the fields the reader needs (the
// measured reason for the readers: events.go's header).
func BenchmarkParseAPIEvents(b *testing.B) {
	resp := []byte(`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" token","logprobs":[]}`)
	msg := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" token"}}`)
	for _, c := range []struct {
		name string
		api  string
		in   []byte
	}{{"responses", "responses", resp}, {"messages", "messages", msg}} {
		b.Run(c.name, func(b *testing.B) {
			var f chunkFields
			var scratch []byte
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if scratch, _, err = parseAPI(c.api, c.in, &f, scratch); err != nil || len(f.text) == 0 {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var v struct {
					Type  string          `json:"type"`
					Delta json.RawMessage `json:"delta"`
					Usage *struct {
						In  *int64 `json:"input_tokens"`
						Out *int64 `json:"output_tokens"`
					} `json:"usage"`
				}
				if err := json.Unmarshal(c.in, &v); err != nil {
					b.Fatal(err)
				}
				if c.api == "messages" {
					var d struct {
						Text string `json:"text"`
					}
					json.Unmarshal(v.Delta, &d)
				} else {
					var s string
					json.Unmarshal(v.Delta, &s)
				}
			}
		})
	}
}
