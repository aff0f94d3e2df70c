package refengine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// The Responses and Messages APIs. Both are chat generation with another request shape and
// another stream framing; the engine schedules them exactly as chat completions (the
// timelines do not depend on the API, only the bytes do), so each framing is a fixture with
// ground truth.
//
// Responses (POST /v1/responses) follows OpenAI's API reference ("Responses", "Streaming
// events") and vLLM's implementation, vllm/entrypoints/openai/responses/serving.py
// (vllm-project/vllm): response.created and response.in_progress as soon as the request is
// accepted (no token yet), response.output_item.added and response.content_part.added with
// the first output, one response.output_text.delta per engine output (a speculative pass is one
// delta of all its tokens, as vLLM sends one per engine output), then
// response.output_text.done, response.content_part.done, response.output_item.done and
// response.completed, whose response carries usage {input_tokens, output_tokens,
// output_tokens_details.reasoning_tokens, total_tokens}. Every event has a sequence_number and
// an "event:" line naming its type; there is no [DONE]. An error in a started stream is an
// "error" event {"type":"error","code","message","param"}.
//
// Messages (POST /v1/messages) follows Anthropic's API reference ("Messages", "Streaming
// Messages") and vLLM's converter, vllm/entrypoints/anthropic/serving.py: message_start (the
// message with empty content and usage.input_tokens) and a ping as soon as the request is
// accepted, content_block_start with the first output, one content_block_delta
// {"type":"text_delta"} per engine output, then content_block_stop, message_delta with the
// stop_reason and usage.output_tokens, and message_stop. An error in a started stream is an
// "error" event {"type":"error","error":{"type","message"}}; error responses have that body
// too. The key may come as x-api-key (Anthropic) or as a bearer token.
//
// With Config.ReasoningFraction the leading output tokens are reasoning, as in chat: a
// Responses stream sends them as a "reasoning" output item (response.reasoning_text.delta)
// before the message item and reports output_tokens_details.reasoning_tokens; a Messages
// stream sends a "thinking" content block (thinking_delta, closed by a signature_delta as
// vLLM's converter does) before the text block.

// wireAPI is the endpoint a request came to.
type wireAPI int

const (
	apiCompletions wireAPI = iota
	apiChat
	apiResponses
	apiMessages
	apiEmbeddings
)

func (a wireAPI) chatLike() bool { return a == apiChat || a == apiResponses || a == apiMessages }

// respPrefix is the prefix of a response id of api.
func (a wireAPI) respPrefix() string {
	switch a {
	case apiChat:
		return "chatcmpl-"
	case apiResponses:
		return "resp_"
	case apiMessages:
		return "msg_"
	case apiEmbeddings:
		return "embd-"
	}
	return "cmpl-"
}

// writeAPIError writes e in api's error format: Anthropic's for Messages, OpenAI's otherwise.
func writeAPIError(w http.ResponseWriter, api wireAPI, e *apiError) {
	if api != apiMessages {
		writeError(w, e)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	w.Write(append(appendAnthropicError(nil, e), '\n'))
}

func anthropicErrorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusServiceUnavailable:
		return "overloaded_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

func appendAnthropicError(b []byte, e *apiError) []byte {
	b = append(b, `{"type":"error","error":{"type":`...)
	b = appendJSONString(b, anthropicErrorType(e.status))
	b = append(b, `,"message":`...)
	b = appendJSONString(b, e.message)
	return append(b, "}}"...)
}

// responsesRequest is the body of POST /v1/responses. Fields the engine does not model
// (store, tools, text, ...) are accepted and ignored.
type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    *string         `json:"instructions"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Temperature     *float64        `json:"temperature"`
	Stream          *bool           `json:"stream"`
}

// messagesRequest is the body of POST /v1/messages.
type messagesRequest struct {
	Model       string          `json:"model"`
	System      json.RawMessage `json:"system"`
	Messages    []wireMessage   `json:"messages"`
	MaxTokens   *int            `json:"max_tokens"`
	Temperature *float64        `json:"temperature"`
	Stream      *bool           `json:"stream"`
}

// decodeJSONBody decodes exactly one JSON object into v.
func decodeJSONBody(body []byte, v any) *apiError {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return badRequest("", "request body has data after the JSON object; send exactly one object")
	}
	return nil
}

// decodeAPIRequest parses and validates a Responses or Messages body into the engine's
// request. It never panics on any input. The API's own decoder reads the body's shape and
// prompt into an apiParams; the checks after it are the two APIs' common ones.
func decodeAPIRequest(body []byte, api wireAPI, lim decodeLimits) (*request, *apiError) {
	r := &request{chat: true, promptHash: fnvOffset, temperature: 1}
	var ap apiParams
	var err *apiError
	switch api {
	case apiResponses:
		ap, err = r.decodeResponsesBody(body, lim)
	case apiMessages:
		ap, err = r.decodeMessagesBody(body, lim)
	}
	if err != nil {
		return nil, err
	}
	if err := r.applyAPIParams(ap, lim); err != nil {
		return nil, err
	}
	return r, nil
}

// apiParams are the fields the Responses and Messages bodies share, under their own names.
type apiParams struct {
	model    string
	maxTok   *int
	maxParam string // the name of the maximum output length's field
	temp     *float64
	stream   *bool
}

// decodeResponsesBody reads a Responses body: its instructions (a system message) and input.
func (r *request) decodeResponsesBody(body []byte, lim decodeLimits) (apiParams, *apiError) {
	var rr responsesRequest
	if err := decodeJSONBody(body, &rr); err != nil {
		return apiParams{}, err
	}
	ap := apiParams{model: rr.Model, maxTok: rr.MaxOutputTokens, maxParam: "max_output_tokens", temp: rr.Temperature, stream: rr.Stream}
	if rr.Instructions != nil && *rr.Instructions != "" {
		raw, _ := json.Marshal(*rr.Instructions)
		if err := r.addMessage("system", raw, "instructions", lim.vision); err != nil {
			return ap, err
		}
	}
	return ap, r.addResponsesInput(rr.Input, lim)
}

// decodeMessagesBody reads a Messages body: max_tokens (required), the system prompt and the
// user and assistant messages.
func (r *request) decodeMessagesBody(body []byte, lim decodeLimits) (apiParams, *apiError) {
	var mr messagesRequest
	if err := decodeJSONBody(body, &mr); err != nil {
		return apiParams{}, err
	}
	ap := apiParams{model: mr.Model, maxTok: mr.MaxTokens, maxParam: "max_tokens", temp: mr.Temperature, stream: mr.Stream}
	if ap.maxTok == nil {
		return ap, badRequest("max_tokens", "max_tokens is required")
	}
	if s := bytes.TrimSpace(mr.System); len(s) > 0 && !bytes.Equal(s, []byte("null")) {
		if err := r.addMessage("system", s, "system", lim.vision); err != nil {
			return ap, err
		}
	}
	if len(mr.Messages) == 0 {
		return ap, badRequest("messages", "`messages` must be a non-empty array of {role, content}")
	}
	for i, m := range mr.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return ap, badRequest(fmt.Sprintf("messages.%d.role", i), "messages.%d.role must be \"user\" or \"assistant\" (system prompts go in \"system\")", i)
		}
		if err := r.addMessage(m.Role, m.Content, fmt.Sprintf("messages.%d.content", i), lim.vision); err != nil {
			return ap, err
		}
	}
	return ap, nil
}

// applyAPIParams checks the model and the prompt's length and sets the output length, the
// temperature and streaming.
func (r *request) applyAPIParams(ap apiParams, lim decodeLimits) *apiError {
	model := ap.model
	if model == "" {
		model = lim.servedModel
	}
	var aerr *apiError
	if r.lora, aerr = lim.resolveModel(model); aerr != nil {
		return aerr
	}
	r.model = model
	if r.promptTokens == 0 {
		return badRequest("input", "the prompt is empty; send at least one token")
	}
	if r.promptTokens >= lim.maxModelLen {
		return badRequest("input", "This model's maximum context length is %d tokens, but the prompt has %d tokens; shorten the prompt.", lim.maxModelLen, r.promptTokens)
	}
	switch maxTok, maxParam := ap.maxTok, ap.maxParam; {
	case maxTok != nil:
		if *maxTok < 1 {
			return badRequest(maxParam, "%s must be at least 1, got %d", maxParam, *maxTok)
		}
		if *maxTok > lim.maxModelLen-r.promptTokens {
			return badRequest(maxParam, "This model's maximum context length is %d tokens. However, you requested %d tokens in the output (%d in the prompt). Reduce the prompt or %s.", lim.maxModelLen, *maxTok, r.promptTokens, maxParam)
		}
		r.maxTokens = *maxTok
	default:
		r.maxTokens = min(lim.defaultMaxTokens, lim.maxModelLen-r.promptTokens)
	}
	if ap.temp != nil {
		if *ap.temp < 0 || *ap.temp > 2 {
			return badRequest("temperature", "temperature must be between 0 and 2, got %g", *ap.temp)
		}
		r.temperature = *ap.temp
	}
	if ap.stream != nil {
		r.stream = *ap.stream
	}
	return nil
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// addResponsesInput adds a Responses "input": a string (one user message) or an array of
// items {"role","content"} (optionally "type":"message"; content a string or input parts).
func (r *request) addResponsesInput(raw json.RawMessage, lim decodeLimits) *apiError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return badRequest("input", "`input` is required")
	}
	if raw[0] == '"' {
		return r.addMessage("user", raw, "input", lim.vision)
	}
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return badRequest("input", "`input` must be a string or an array of {role, content} items: %v", err)
	}
	if len(items) == 0 {
		return badRequest("input", "`input` is an empty array")
	}
	for i, it := range items {
		if it.Type != "" && it.Type != "message" {
			return badRequest(fmt.Sprintf("input[%d].type", i), "input item type %q is not supported; send messages", clipText(it.Type, 40))
		}
		if it.Role == "" {
			return badRequest(fmt.Sprintf("input[%d].role", i), "input[%d].role is required", i)
		}
		if err := r.addMessage(it.Role, it.Content, fmt.Sprintf("input[%d].content", i), lim.vision); err != nil {
			return err
		}
	}
	return nil
}

// anthropicStop maps the engine's finish reason to Anthropic's stop_reason.
func anthropicStop(reason string) string {
	if reason == "length" {
		return "max_tokens"
	}
	return "end_turn"
}
