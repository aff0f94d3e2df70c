package loadgen

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmbench/llmbench/tokenizer"
)

// tokStub is a small server that counts prompts with a real Hugging Face tokenizer.json (the
// SentencePiece-style file in tokenizer/testdata, on which the reference tokenizer's words are
// several tokens each), not with the reference tokenizer the engine shares with llmbench. It
// answers /tokenize, completions and chat the way wire says llama.cpp, vLLM or SGLang do:
// their /tokenize request and response shapes, usage in the stream and in whole bodies, and
// their context-length errors.
type tokStub struct {
	wire string // "llamacpp", "vllm" or "sglang"
	tok  *tokenizer.HF
	// ctx is the context size: a longer prompt is refused with the wire's error.
	ctx int
	// chatOverhead is the tokens the chat template adds to a chat prompt.
	chatOverhead int
	// noTokenize answers /tokenize with 404 (a server without it).
	noTokenize bool
	tokenizes  atomic.Int64
	probes     atomic.Int64
}

func newTokStub(t *testing.T, wire string) *tokStub {
	t.Helper()
	h, err := tokenizer.LoadHF("../tokenizer/testdata/sentencepiece.tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	return &tokStub{wire: wire, tok: h, ctx: 4096, chatOverhead: 7}
}

// count is what the server counts for text: its tokens and a BOS.
func (s *tokStub) count(text string) int { return s.tok.Count(text) + 1 }

func (s *tokStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	switch r.URL.Path {
	case "/tokenize":
		s.tokenize(w, body)
	case "/v1/completions", "/v1/chat/completions":
		s.generate(w, body, r.URL.Path == "/v1/chat/completions")
	default:
		http.NotFound(w, r)
	}
}

func str(raw json.RawMessage) string {
	var v string
	_ = json.Unmarshal(raw, &v)
	return v
}

func (s *tokStub) tokenize(w http.ResponseWriter, body map[string]json.RawMessage) {
	if s.noTokenize {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"detail":"Not Found"}`))
		return
	}
	s.tokenizes.Add(1)
	text := str(body["prompt"])
	if s.wire == "llamacpp" {
		text = str(body["content"])
	}
	ids := append([]int{1}, s.tok.Encode(text)...)
	w.Header().Set("Content-Type", "application/json")
	if s.wire == "llamacpp" {
		_ = json.NewEncoder(w).Encode(map[string]any{"tokens": ids})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"count": len(ids), "max_model_len": s.ctx, "tokens": ids})
}

func (s *tokStub) generate(w http.ResponseWriter, body map[string]json.RawMessage, chat bool) {
	var n int
	if chat {
		var msgs []struct{ Content string }
		_ = json.Unmarshal(body["messages"], &msgs)
		var parts []string
		for _, m := range msgs {
			parts = append(parts, m.Content)
		}
		n = s.count(strings.Join(parts, "")) + s.chatOverhead
	} else {
		n = s.count(str(body["prompt"]))
	}
	if n > s.ctx {
		s.contextError(w, n)
		return
	}
	var stream bool
	_ = json.Unmarshal(body["stream"], &stream)
	if !stream {
		s.probes.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"text_completion","choices":[{"index":0,"text":" ok","message":{"role":"assistant","content":" ok"},"finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d}}`, n, n+1)
		return
	}
	sw := startSSE(w)
	if chat {
		sw.data(chatChunk(" ok"))
	} else {
		sw.data(textChunk(" ok", -1))
	}
	sw.data(usageChunk(n, 1))
	sw.done()
}

// contextError refuses a prompt of n tokens as each server does.
func (s *tokStub) contextError(w http.ResponseWriter, n int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	switch s.wire {
	case "llamacpp":
		fmt.Fprintf(w, `{"error":{"code":400,"message":"request (%d tokens) exceeds the available context size (%d tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":%d,"n_ctx":%d}}`, n, s.ctx, n, s.ctx)
	case "sglang":
		fmt.Fprintf(w, `{"object":"error","message":"The input (%d tokens) is longer than the model's context length (%d tokens).","type":"BadRequestError","param":null,"code":400}`, n, s.ctx)
	default:
		fmt.Fprintf(w, `{"object":"error","message":"This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.","type":"BadRequestError","param":null,"code":400}`, s.ctx, n)
	}
}
