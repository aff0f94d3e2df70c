package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// The APIs a target may speak besides OpenAI's completions and chat completions (Target.API):
//
//   - "responses": OpenAI Responses, POST /v1/responses. The body carries "input" (the
//     conversation as role/content items, content parts "input_text" and "input_image"),
//     "max_output_tokens" and "stream". Streamed, the server sends typed events (response.created,
//     response.output_text.delta with the text in "delta", response.completed whose "response"
//     holds usage {input_tokens, output_tokens, output_tokens_details.reasoning_tokens}); the
//     stream ends after response.completed (or response.incomplete / response.failed), with no
//     [DONE]. Followed: OpenAI's API reference ("Responses", "Streaming events") and vLLM's
//     implementation, vllm/entrypoints/openai/responses/serving.py (vllm-project/vllm).
//   - "messages": Anthropic Messages, POST /v1/messages, with the key in x-api-key and an
//     anthropic-version header (2023-06-01). System messages go into the top-level "system"
//     field; images are image blocks {"type":"image","source":{"type":"base64",...}}. Streamed
//     events: message_start (message.usage.input_tokens), content_block_start,
//     content_block_delta (delta {"type":"text_delta","text"} or "thinking_delta"),
//     content_block_stop, message_delta (usage.output_tokens, cumulative), message_stop, any
//     number of ping events, and error events {"type":"error","error":{"type","message"}}.
//     Followed: Anthropic's API reference ("Messages", "Streaming Messages") and the Messages
//     endpoint vLLM serves, vllm/entrypoints/anthropic/ (vllm-project/vllm).
//   - "embeddings": OpenAI embeddings, POST /v1/embeddings, never streamed: "input" is an array
//     of strings (Options.BatchSize trace requests per call), the response's "data" holds one
//     embedding per input and usage.prompt_tokens counts the batch. One Record is one call.
//
// How each response is read is in events.go; the token accounting (count.go) is the same for
// every API: the server's usage whenever it reports one.

// APIs lists the accepted Target.API values ("" chooses completions or chat per request).
func APIs() []string {
	return []string{"completions", "chat", "responses", "messages", "embeddings"}
}

// anthropicVersion is the anthropic-version header sent with --api messages.
const anthropicVersion = "2023-06-01"

func apiPath(api string, chat bool) string {
	switch api {
	case "responses":
		return "/v1/responses"
	case "messages":
		return "/v1/messages"
	case "embeddings":
		return "/v1/embeddings"
	}
	if chat {
		return "/v1/chat/completions"
	}
	return "/v1/completions"
}

// contentPart is one OpenAI content part (chat: text, image_url; Responses: input_text,
// input_image) or Anthropic content block (text, image).
type contentPart struct {
	Type     string       `json:"type"`
	Text     string       `json:"text,omitempty"`
	ImageURL any          `json:"image_url,omitempty"` // chat: {"url":...}; Responses: the URL string
	Source   *imageSource `json:"source,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

// imageSource is an Anthropic base64 image source.
type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// wireMessageOut is one message on the wire: its content a string, or parts when it has images.
type wireMessageOut struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// wireMessages encodes ms for api ("chat", "responses" or "messages"); images become content
// parts after the text.
func (c *client) wireMessages(api string, ms []traces.Message) ([]wireMessageOut, error) {
	out := make([]wireMessageOut, 0, len(ms))
	for i, m := range ms {
		w := wireMessageOut{Role: m.Role, Content: m.Content}
		if len(m.Images) > 0 {
			parts := make([]contentPart, 0, len(m.Images)+1)
			text := "text"
			if api == "responses" {
				text = "input_text"
			}
			if m.Content != "" {
				parts = append(parts, contentPart{Type: text, Text: m.Content})
			}
			for j, im := range m.Images {
				img, err := c.images.get(im)
				if err != nil {
					return nil, fmt.Errorf("messages[%d].images[%d]: %w", i, j, err)
				}
				switch api {
				case "messages":
					parts = append(parts, contentPart{Type: "image", Source: &imageSource{Type: "base64", MediaType: img.mediaType, Data: img.base64}})
				case "responses":
					parts = append(parts, contentPart{Type: "input_image", ImageURL: img.dataURL})
				default:
					parts = append(parts, contentPart{Type: "image_url", ImageURL: imageURL{URL: img.dataURL}})
				}
			}
			w.Content = parts
		}
		out = append(out, w)
	}
	return out, nil
}

// responsesBody is the body of POST /v1/responses.
type responsesBody struct {
	Model           string           `json:"model"`
	Input           []wireMessageOut `json:"input"`
	MaxOutputTokens int              `json:"max_output_tokens"`
	Stream          bool             `json:"stream"`
	Temperature     *float64         `json:"temperature,omitempty"`
	// Store false: a benchmark's responses need not be kept by the server.
	Store bool `json:"store"`
}

// messagesBody is the body of POST /v1/messages.
type messagesBody struct {
	Model       string           `json:"model"`
	System      string           `json:"system,omitempty"`
	Messages    []wireMessageOut `json:"messages"`
	MaxTokens   int              `json:"max_tokens"`
	Stream      bool             `json:"stream"`
	Temperature *float64         `json:"temperature,omitempty"`
}

// embeddingsBody is the body of POST /v1/embeddings.
type embeddingsBody struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

// apiBody encodes the body of a Responses, Messages or embeddings call.
func (c *client) apiBody(k *call) ([]byte, error) {
	switch k.api {
	case "embeddings":
		return json.Marshal(&embeddingsBody{Model: c.modelOf(k), Input: k.inputs, EncodingFormat: "float"})
	case "responses":
		in, err := c.wireMessages("responses", k.messages)
		if err != nil {
			return nil, err
		}
		return json.Marshal(&responsesBody{Model: c.modelOf(k), Input: in, MaxOutputTokens: k.maxTokens,
			Stream: c.target.Stream, Temperature: k.temperature})
	case "messages":
		// Anthropic takes system prompts in a field of their own, not as messages.
		var sys string
		rest := make([]traces.Message, 0, len(k.messages))
		for _, m := range k.messages {
			if m.Role == "system" && len(m.Images) == 0 {
				if sys != "" {
					sys += "\n"
				}
				sys += m.Content
				continue
			}
			rest = append(rest, m)
		}
		ms, err := c.wireMessages("messages", rest)
		if err != nil {
			return nil, err
		}
		return json.Marshal(&messagesBody{Model: c.modelOf(k), System: sys, Messages: ms, MaxTokens: k.maxTokens,
			Stream: c.target.Stream, Temperature: k.temperature})
	}
	return nil, fmt.Errorf("API %q has no body encoder", k.api)
}

// endMarker names the event that ends a stream of api.
func endMarker(api string) string {
	switch api {
	case "responses":
		return "response.completed"
	case "messages":
		return "message_stop"
	}
	return "[DONE]"
}

// embeddings reads an embeddings response into rec: one vector per input, the batch's prompt
// tokens from usage.prompt_tokens (the input tokens generated nothing: OutputTokens is 0).
func (c *client) embeddings(ctx context.Context, resp *http.Response, k *call, rec *metrics.Record) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONBody+1))
	rec.End = c.now()
	if err != nil {
		kind, msg := c.classify(ctx, err, metrics.FailStreamBroken)
		c.fail(rec, kind, "reading the response: "+msg)
		return
	}
	if len(b) > maxJSONBody {
		c.fail(rec, metrics.FailMalformed, fmt.Sprintf("the response body is longer than %d bytes; stopped reading", maxJSONBody))
		return
	}
	var e embeddingFields
	if err := parseEmbeddings(b, &e); err != nil {
		c.fail(rec, metrics.FailMalformed, fmt.Sprintf("response body: %v: %q", err, clip(b, 120)))
		return
	}
	if e.isError {
		c.fail(rec, metrics.FailServerError, "error in response: "+string(e.errMsg))
		c.noteServerError(rec, b)
		return
	}
	rec.OutputTokens = 0
	switch {
	case e.usageBad != "":
		rec.UsageRejected = metrics.TruncateError(e.usageBad)
	case e.promptTokens >= 0:
		rec.ServerInputTokens, rec.ServerOutputTokens = int(e.promptTokens), 0
	}
	switch {
	case rec.ServerInputTokens >= 0:
		rec.TokenSource = metrics.TokensFromUsage
	case c.tok != nil:
		rec.TokenSource = metrics.TokensFromTokenizer
	default:
		rec.TokenSource = metrics.TokensFromChunks
	}
	if e.vectors != len(k.inputs) || e.items != len(k.inputs) {
		c.fail(rec, metrics.FailMalformed, fmt.Sprintf("%d embeddings (%d data items) for %d inputs", e.vectors, e.items, len(k.inputs)))
		return
	}
}
