package loadgen

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// Each backend's field for the prompt tokens found in its prefix cache, in its real framing
// (vLLM and SGLang: usage.prompt_tokens_details.cached_tokens, as OpenAI; OpenAI Responses:
// usage.input_tokens_details.cached_tokens; Anthropic Messages: cache_read_input_tokens and
// cache_creation_input_tokens beside an input_tokens that counts only the uncached rest;
// llama.cpp: timings.cache_n), served by a stub on 127.0.0.1 and read by a real run.
const (
	vllmChatCached = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a b\"},\"logprobs\":null,\"finish_reason\":\"length\",\"stop_reason\":null}]}\n\n" +
		"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":1200,\"total_tokens\":1202,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":1024}}}\n\n" +
		"data: [DONE]\n\n"
	sglangCompletionCached = "data: {\"id\":\"c1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" a b\",\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\"\",\"logprobs\":null,\"finish_reason\":\"length\"}],\"usage\":null}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":300,\"total_tokens\":302,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":256},\"reasoning_tokens\":0}}\n\n" +
		"data: [DONE]\n\n"
	respDoneCached = "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":9,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":2006,\"input_tokens_details\":{\"cached_tokens\":1920},\"output_tokens\":2,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":2008}}}\n\n"
	msgStartCached = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":21,\"cache_creation_input_tokens\":188,\"cache_read_input_tokens\":1500,\"output_tokens\":1}}}\n\n"
	llamaCached    = "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}],\"created\":1,\"id\":\"chatcmpl-1\",\"model\":\"m\",\"system_fingerprint\":\"b1-x\",\"object\":\"chat.completion.chunk\"}\n\n" +
		"data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\" a\"}}],\"created\":1,\"id\":\"chatcmpl-1\",\"model\":\"m\",\"object\":\"chat.completion.chunk\"}\n\n" +
		"data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\" b\"}}],\"created\":1,\"id\":\"chatcmpl-1\",\"model\":\"m\",\"object\":\"chat.completion.chunk\"}\n\n" +
		"data: {\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":{}}],\"created\":1,\"id\":\"chatcmpl-1\",\"model\":\"m\",\"object\":\"chat.completion.chunk\",\"usage\":{\"completion_tokens\":2,\"prompt_tokens\":600,\"total_tokens\":602},\"timings\":{\"cache_n\":512,\"prompt_n\":88,\"prompt_ms\":10.5,\"prompt_per_token_ms\":0.26,\"predicted_n\":2,\"predicted_ms\":20.1}}\n\n" +
		"data: [DONE]\n\n"
	chatWholeCached = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":" a b"},"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":900,"completion_tokens":2,"total_tokens":902,"prompt_tokens_details":{"cached_tokens":768,"audio_tokens":0}}}`
)

func TestCachedTokensPerBackend(t *testing.T) {
	for _, tc := range []struct {
		name, api, body   string
		stream            bool
		cached, write, in int
		source            string
		contentType       string
	}{
		{"vllm chat", "chat", vllmChatCached, true, 1024, 0, 1200, metrics.CacheFromPromptDetails, "text/event-stream"},
		{"sglang completions", "completions", sglangCompletionCached, true, 256, 0, 300, metrics.CacheFromPromptDetails, "text/event-stream"},
		{"openai chat, not streamed", "chat", chatWholeCached, false, 768, 0, 900, metrics.CacheFromPromptDetails, "application/json"},
		{"responses", "responses", respCreated + respDelta + respDoneCached, true, 1920, 0, 2006, metrics.CacheFromInputDetails, "text/event-stream"},
		// Anthropic's input_tokens (21) is what follows the last cache breakpoint: the prompt is
		// 21 + 188 written + 1500 read.
		{"messages", "messages", msgStartCached + msgBlock + msgDelta + msgEnd, true, 1500, 188, 1709, metrics.CacheFromMessages, "text/event-stream"},
		// llama.cpp's prompt_n counts only the tokens it evaluated; usage.prompt_tokens is the
		// whole prompt, and cache_n the tokens its slot reused.
		{"llamacpp", "chat", llamaCached, true, 512, 0, 600, metrics.CacheFromTimings, "text/event-stream"},
		// More cached than the prompt the usage counted is a defect of the server, not kept.
		{"cached above the prompt", "chat", strings.Replace(vllmChatCached, `"cached_tokens":1024`, `"cached_tokens":1300`, 1), true, 0, 0, 1200, "", "text/event-stream"},
		{"no cache field", "chat", vllmChatCached[:0] + "data: " + chatChunk(" a b") + "\n\ndata: " + usageChunk(10, 2) + "\n\ndata: [DONE]\n\n", true, 0, 0, 10, "", "text/event-stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", tc.contentType)
				io.WriteString(w, tc.body)
			})
			tg := target(srv.URL)
			tg.Stream, tg.API = tc.stream, tc.api
			rec := runOne(t, Options{Target: tg}, traces.Request{ID: "r1", InputTokens: 5, OutputTokens: 2, Prompt: " hello there"})
			if !rec.OK() {
				t.Fatalf("request failed: %s %s", rec.Failure, rec.Error)
			}
			if rec.CachedInputTokens != tc.cached || rec.CacheWriteTokens != tc.write || rec.CacheSource != tc.source || rec.ServerInputTokens != tc.in {
				t.Fatalf("cached %d write %d source %q prompt %d; want %d %d %q %d",
					rec.CachedInputTokens, rec.CacheWriteTokens, rec.CacheSource, rec.ServerInputTokens,
					tc.cached, tc.write, tc.source, tc.in)
			}
		})
	}
}

// TestLlamacppCacheN reads timings.cache_n from llama.cpp's finish chunk.
func TestLlamacppCacheN(t *testing.T) {
	var f chunkFields
	in := `{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"usage":{"completion_tokens":2,"prompt_tokens":600,"total_tokens":602},"timings":{"cache_n":512,"prompt_n":88,"prompt_ms":10.5,"predicted_n":2,"predicted_ms":20.1}}`
	if _, err := parseChunk([]byte(in), &f, nil); err != nil {
		t.Fatal(err)
	}
	if f.cachedTokens != 512 || f.cacheSrc != metrics.CacheFromTimings || f.promptTokens != 600 {
		t.Fatalf("cache_n %d source %q prompt %d", f.cachedTokens, f.cacheSrc, f.promptTokens)
	}
	// A bad cache_n is named like any bad usage count and reports no cache.
	in = `{"choices":[],"timings":{"cache_n":-4}}`
	if _, err := parseChunk([]byte(in), &f, nil); err != nil {
		t.Fatal(err)
	}
	if f.cacheSrc != "" || f.usageBad == "" {
		t.Fatalf("cache_n -4: source %q, bad %q", f.cacheSrc, f.usageBad)
	}
}

// TestCachedTokenParsingAllocatesNothing: reading the cache fields keeps the parsers
// allocation-free, as every other usage field is.
func TestCachedTokenParsingAllocatesNothing(t *testing.T) {
	data := func(ev string) []byte {
		_, payload, _ := strings.Cut(ev, "data: ")
		payload, _, _ = strings.Cut(payload, "\n")
		return []byte(payload)
	}
	for _, tc := range []struct {
		name  string
		b     []byte
		parse func(b []byte, f *chunkFields, scratch []byte) error
	}{
		{"chat usage details", []byte(chatWholeCached), func(b []byte, f *chunkFields, s []byte) error { _, err := parseChunk(b, f, s); return err }},
		{"llama.cpp timings", data(llamaCached[strings.LastIndex(llamaCached[:len(llamaCached)-len("data: [DONE]\n\n")], "data: "):]),
			func(b []byte, f *chunkFields, s []byte) error { _, err := parseChunk(b, f, s); return err }},
		{"responses", data(respDoneCached), func(b []byte, f *chunkFields, s []byte) error { _, _, err := parseResponsesEvent(b, f, s); return err }},
		{"messages", data(msgStartCached), func(b []byte, f *chunkFields, s []byte) error { _, _, err := parseMessagesEvent(b, f, s); return err }},
	} {
		var f chunkFields
		scratch := make([]byte, 0, 256)
		if err := tc.parse(tc.b, &f, scratch); err != nil || f.cacheSrc == "" {
			t.Fatalf("%s: %v, source %q in %s", tc.name, err, f.cacheSrc, tc.b)
		}
		if n := testing.AllocsPerRun(100, func() { tc.parse(tc.b, &f, scratch) }); n != 0 {
			t.Errorf("%s: %v allocations per parse", tc.name, n)
		}
	}
}
