// Package tokstub is a small test server that counts prompts with a real Hugging Face
// tokenizer.json, not with the reference tokenizer the reference engine shares with llmbench,
// and answers /tokenize, completions and chat in the shapes llama.cpp, vLLM and SGLang use
// (docs/inputs.md). Only tests use it: a test that talks to the reference engine alone cannot
// see a prompt sized on the wrong tokenizer.
package tokstub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/llmbench/llmbench/tokenizer"
)

// Server counts with a tokenizer.json (tokenizer/testdata's SentencePiece-style file, on
// which the reference tokenizer's words are several tokens each) and answers the way Wire
// says llama.cpp, vLLM or SGLang do: their /tokenize request and response shapes, usage in the
// stream and in whole bodies, and their context-length errors. Set the fields before serving.
type Server struct {
	Wire string // "llamacpp", "vllm" or "sglang"
	Tok  *tokenizer.HF
	// Ctx is the context size: a longer prompt is refused with the wire's error.
	Ctx int
	// ChatOverhead is the tokens the chat template adds to a chat prompt.
	ChatOverhead int
	// NoTokenize answers /tokenize with 404 (a server without it).
	NoTokenize bool
	// Tokenizes and Probes count the /tokenize calls and the non-streamed requests served.
	Tokenizes atomic.Int64
	Probes    atomic.Int64
}

// New returns a Server for wire counting with the tokenizer.json at path, with a context of
// 4,096 tokens and a chat template of 7 tokens.
func New(wire, path string) (*Server, error) {
	h, err := tokenizer.LoadHF(path)
	if err != nil {
		return nil, err
	}
	return &Server{Wire: wire, Tok: h, Ctx: 4096, ChatOverhead: 7}, nil
}

// Count is what the server counts for a completion prompt: its tokens and a BOS.
func (s *Server) Count(text string) int { return s.Tok.Count(text) + 1 }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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

func (s *Server) tokenize(w http.ResponseWriter, body map[string]json.RawMessage) {
	if s.NoTokenize {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"detail":"Not Found"}`))
		return
	}
	s.Tokenizes.Add(1)
	w.Header().Set("Content-Type", "application/json")
	if s.Wire == "llamacpp" {
		// llama.cpp tokenizes "content" when the body has it and answers an empty list
		// otherwise.
		ids := []int{}
		if raw, ok := body["content"]; ok {
			ids = append([]int{1}, s.Tok.Encode(str(raw))...)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"tokens": ids})
		return
	}
	raw, ok := body["prompt"]
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"object":"error","message":"[{'type': 'missing', 'loc': ('body', 'prompt'), 'msg': 'Field required'}]","type":"BadRequestError","param":null,"code":400}`))
		return
	}
	ids := append([]int{1}, s.Tok.Encode(str(raw))...)
	_ = json.NewEncoder(w).Encode(map[string]any{"count": len(ids), "max_model_len": s.Ctx, "tokens": ids})
}

func (s *Server) generate(w http.ResponseWriter, body map[string]json.RawMessage, chat bool) {
	var n int
	if chat {
		var msgs []struct{ Content string }
		_ = json.Unmarshal(body["messages"], &msgs)
		var parts []string
		for _, m := range msgs {
			parts = append(parts, m.Content)
		}
		n = s.Count(strings.Join(parts, "")) + s.ChatOverhead
	} else {
		n = s.Count(str(body["prompt"]))
	}
	if n > s.Ctx {
		s.contextError(w, n)
		return
	}
	var stream bool
	_ = json.Unmarshal(body["stream"], &stream)
	if !stream {
		s.Probes.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"text_completion","choices":[{"index":0,"text":" ok","message":{"role":"assistant","content":" ok"},"finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d}}`, n, n+1)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	content := `{"id":"x","object":"text_completion","choices":[{"index":0,"text":" ok","finish_reason":null}]}`
	if chat {
		content = `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" ok"},"finish_reason":null}]}`
	}
	fmt.Fprintf(w, "data: %s\n\ndata: {\"id\":\"x\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":1,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", content, n, n+1)
}

// contextError refuses a prompt of n tokens as each server does.
func (s *Server) contextError(w http.ResponseWriter, n int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	switch s.Wire {
	case "llamacpp":
		fmt.Fprintf(w, `{"error":{"code":400,"message":"request (%d tokens) exceeds the available context size (%d tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":%d,"n_ctx":%d}}`, n, s.Ctx, n, s.Ctx)
	case "sglang":
		fmt.Fprintf(w, `{"object":"error","message":"The input (%d tokens) is longer than the model's context length (%d tokens).","type":"BadRequestError","param":null,"code":400}`, n, s.Ctx)
	default:
		fmt.Fprintf(w, `{"object":"error","message":"This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.","type":"BadRequestError","param":null,"code":400}`, s.Ctx, n)
	}
}
