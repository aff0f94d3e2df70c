package refengine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
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
// request. It never panics on any input.
func decodeAPIRequest(body []byte, api wireAPI, lim decodeLimits) (*request, *apiError) {
	r := &request{chat: true, promptHash: fnvOffset, temperature: 1}
	var model string
	var maxTok *int
	var temp *float64
	var stream *bool
	maxParam := "max_tokens"
	switch api {
	case apiResponses:
		var rr responsesRequest
		if err := decodeJSONBody(body, &rr); err != nil {
			return nil, err
		}
		model, maxTok, temp, stream, maxParam = rr.Model, rr.MaxOutputTokens, rr.Temperature, rr.Stream, "max_output_tokens"
		if rr.Instructions != nil && *rr.Instructions != "" {
			raw, _ := json.Marshal(*rr.Instructions)
			if err := r.addMessage("system", raw, "instructions", lim.vision); err != nil {
				return nil, err
			}
		}
		if err := r.addResponsesInput(rr.Input, lim); err != nil {
			return nil, err
		}
	case apiMessages:
		var mr messagesRequest
		if err := decodeJSONBody(body, &mr); err != nil {
			return nil, err
		}
		model, maxTok, temp, stream = mr.Model, mr.MaxTokens, mr.Temperature, mr.Stream
		if maxTok == nil {
			return nil, badRequest("max_tokens", "max_tokens is required")
		}
		if s := bytes.TrimSpace(mr.System); len(s) > 0 && !bytes.Equal(s, []byte("null")) {
			if err := r.addMessage("system", s, "system", lim.vision); err != nil {
				return nil, err
			}
		}
		if len(mr.Messages) == 0 {
			return nil, badRequest("messages", "`messages` must be a non-empty array of {role, content}")
		}
		for i, m := range mr.Messages {
			if m.Role != "user" && m.Role != "assistant" {
				return nil, badRequest(fmt.Sprintf("messages.%d.role", i), "messages.%d.role must be \"user\" or \"assistant\" (system prompts go in \"system\")", i)
			}
			if err := r.addMessage(m.Role, m.Content, fmt.Sprintf("messages.%d.content", i), lim.vision); err != nil {
				return nil, err
			}
		}
	}
	if model == "" {
		model = lim.servedModel
	}
	if model != lim.servedModel {
		return nil, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", param: "model", code: "model_not_found",
			message: fmt.Sprintf("The model `%s` does not exist; this server serves `%s`.", clipText(model, 200), lim.servedModel)}
	}
	r.model = model
	if r.promptTokens == 0 {
		return nil, badRequest("input", "the prompt is empty; send at least one token")
	}
	if r.promptTokens >= lim.maxModelLen {
		return nil, badRequest("input", "This model's maximum context length is %d tokens, but the prompt has %d tokens; shorten the prompt.", lim.maxModelLen, r.promptTokens)
	}
	switch {
	case maxTok != nil:
		if *maxTok < 1 {
			return nil, badRequest(maxParam, "%s must be at least 1, got %d", maxParam, *maxTok)
		}
		if *maxTok > lim.maxModelLen-r.promptTokens {
			return nil, badRequest(maxParam, "This model's maximum context length is %d tokens. However, you requested %d tokens in the output (%d in the prompt). Reduce the prompt or %s.", lim.maxModelLen, *maxTok, r.promptTokens, maxParam)
		}
		r.maxTokens = *maxTok
	default:
		r.maxTokens = min(lim.defaultMaxTokens, lim.maxModelLen-r.promptTokens)
	}
	if temp != nil {
		if *temp < 0 || *temp > 2 {
			return nil, badRequest("temperature", "temperature must be between 0 and 2, got %g", *temp)
		}
		r.temperature = *temp
	}
	if stream != nil {
		r.stream = *stream
	}
	return r, nil
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

// apiEncoder writes the events of one Responses or Messages stream. The output is a sequence
// of blocks (Responses: output items; Messages: content blocks): with the engine's reasoning
// mode (Config.ReasoningFraction) a reasoning block (a "reasoning" item of reasoning_text, a
// "thinking" block) before the answer's (a "message" item of output_text, a "text" block).
type apiEncoder struct {
	api     wireAPI
	id      string // response id
	suffix  string // the id without its prefix, for item ids
	created int64
	model   string
	prompt  int
	seq     int // Responses sequence_number

	blocks    []apiBlock
	reasoning []byte // all reasoning text so far
	answer    []byte // all answer text so far
}

// apiBlock is one output block.
type apiBlock struct {
	reasoning bool
	open      bool
}

func (a *apiEncoder) event(b []byte, name string) []byte {
	b = append(b, "event: "...)
	b = append(b, name...)
	return append(b, "\ndata: "...)
}

func (a *apiEncoder) itemID(reasoning bool) string {
	if reasoning {
		return "rs_" + a.suffix
	}
	return "msg_" + a.suffix
}

// appendItem appends a Responses output item with its text (nil: still empty).
func (a *apiEncoder) appendItem(b []byte, reasoning bool, status string, text []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, a.itemID(reasoning))
	if reasoning {
		b = append(b, `,"type":"reasoning","status":`...)
		b = appendJSONString(b, status)
		b = append(b, `,"summary":[],"content":[`...)
		if text != nil {
			b = append(b, `{"type":"reasoning_text","text":`...)
			b = appendJSONBytes(b, text)
			b = append(b, '}')
		}
		return append(b, "]}"...)
	}
	b = append(b, `,"type":"message","status":`...)
	b = appendJSONString(b, status)
	b = append(b, `,"role":"assistant","content":[`...)
	if text != nil {
		b = append(b, `{"type":"output_text","text":`...)
		b = appendJSONBytes(b, text)
		b = append(b, `,"annotations":[]}`...)
	}
	return append(b, "]}"...)
}

// appendResponse appends a Responses response object; done adds the output and the usage.
func (a *apiEncoder) appendResponse(b []byte, status string, completion, reasoned int, done bool) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, a.id)
	b = append(b, `,"object":"response","created_at":`...)
	b = strconv.AppendInt(b, a.created, 10)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, status)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, a.model)
	b = append(b, `,"output":[`...)
	if done {
		for i, bl := range a.blocks {
			if i > 0 {
				b = append(b, ',')
			}
			b = a.appendItem(b, bl.reasoning, "completed", a.textOf(bl.reasoning))
		}
	}
	b = append(b, `],"usage":`...)
	if !done {
		return append(b, "null}"...)
	}
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(a.prompt), 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":0},"output_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(reasoned), 10)
	b = append(b, `},"total_tokens":`...)
	b = strconv.AppendInt(b, int64(a.prompt+completion), 10)
	return append(b, "}}"...)
}

func (a *apiEncoder) textOf(reasoning bool) []byte {
	if reasoning {
		return append([]byte{}, a.reasoning...)
	}
	return append([]byte{}, a.answer...)
}

// respEvent starts a Responses event of type t with its sequence number.
func (a *apiEncoder) respEvent(b []byte, t string) []byte {
	b = a.event(b, t)
	b = append(b, `{"type":`...)
	b = appendJSONString(b, t)
	b = append(b, `,"sequence_number":`...)
	b = strconv.AppendInt(b, int64(a.seq), 10)
	a.seq++
	return b
}

// itemRef appends the item, output and content indexes of block i.
func (a *apiEncoder) itemRef(b []byte, i int) []byte {
	b = append(b, `,"item_id":`...)
	b = appendJSONString(b, a.itemID(a.blocks[i].reasoning))
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	return append(b, `,"content_index":0`...)
}

// appendStart appends the events sent when the request is accepted.
func (a *apiEncoder) appendStart(b []byte) []byte {
	if a.api == apiResponses {
		for _, t := range []string{"response.created", "response.in_progress"} {
			b = a.respEvent(b, t)
			b = append(b, `,"response":`...)
			b = a.appendResponse(b, "in_progress", 0, 0, false)
			b = append(b, "}\n\n"...)
		}
		return b
	}
	b = a.event(b, "message_start")
	b = append(b, `{"type":"message_start","message":{"id":`...)
	b = appendJSONString(b, a.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendJSONString(b, a.model)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(a.prompt), 10)
	b = append(b, `,"output_tokens":0}}}`+"\n\n"...)
	b = a.event(b, "ping")
	return append(b, `{"type":"ping"}`+"\n\n"...)
}

// appendBlockStart opens block i.
func (a *apiEncoder) appendBlockStart(b []byte, i int) []byte {
	reasoning := a.blocks[i].reasoning
	if a.api == apiResponses {
		b = a.respEvent(b, "response.output_item.added")
		b = append(b, `,"output_index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"item":`...)
		b = a.appendItem(b, reasoning, "in_progress", nil)
		b = append(b, "}\n\n"...)
		if reasoning {
			return b
		}
		b = a.respEvent(b, "response.content_part.added")
		b = a.itemRef(b, i)
		return append(b, `,"part":{"type":"output_text","text":"","annotations":[]}}`+"\n\n"...)
	}
	b = a.event(b, "content_block_start")
	b = append(b, `{"type":"content_block_start","index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	if reasoning {
		return append(b, `,"content_block":{"type":"thinking","thinking":""}}`+"\n\n"...)
	}
	return append(b, `,"content_block":{"type":"text","text":""}}`+"\n\n"...)
}

// appendBlockEnd closes block i.
func (a *apiEncoder) appendBlockEnd(b []byte, i int) []byte {
	reasoning := a.blocks[i].reasoning
	a.blocks[i].open = false
	text := a.textOf(reasoning)
	if a.api == apiResponses {
		if reasoning {
			b = a.respEvent(b, "response.reasoning_text.done")
			b = a.itemRef(b, i)
		} else {
			b = a.respEvent(b, "response.output_text.done")
			b = a.itemRef(b, i)
		}
		b = append(b, `,"text":`...)
		b = appendJSONBytes(b, text)
		b = append(b, "}\n\n"...)
		if !reasoning {
			b = a.respEvent(b, "response.content_part.done")
			b = a.itemRef(b, i)
			b = append(b, `,"part":{"type":"output_text","text":`...)
			b = appendJSONBytes(b, text)
			b = append(b, `,"annotations":[]}}`+"\n\n"...)
		}
		b = a.respEvent(b, "response.output_item.done")
		b = append(b, `,"output_index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"item":`...)
		b = a.appendItem(b, reasoning, "completed", text)
		return append(b, "}\n\n"...)
	}
	if reasoning {
		// As vLLM's converter does, a thinking block ends with its signature.
		b = a.event(b, "content_block_delta")
		b = append(b, `{"type":"content_block_delta","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"delta":{"type":"signature_delta","signature":`...)
		b = appendJSONString(b, a.suffix)
		b = append(b, "}}\n\n"...)
	}
	b = a.event(b, "content_block_stop")
	b = append(b, `{"type":"content_block_stop","index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	return append(b, "}\n\n"...)
}

// appendPiece appends one piece of output text, opening a block of its kind if needed.
func (a *apiEncoder) appendPiece(b, text []byte, reasoning bool) []byte {
	if n := len(a.blocks); n == 0 || a.blocks[n-1].reasoning != reasoning {
		if n > 0 && a.blocks[n-1].open {
			b = a.appendBlockEnd(b, n-1)
		}
		a.blocks = append(a.blocks, apiBlock{reasoning: reasoning, open: true})
		b = a.appendBlockStart(b, n)
	}
	i := len(a.blocks) - 1
	if reasoning {
		a.reasoning = append(a.reasoning, text...)
	} else {
		a.answer = append(a.answer, text...)
	}
	if a.api == apiResponses {
		if reasoning {
			b = a.respEvent(b, "response.reasoning_text.delta")
		} else {
			b = a.respEvent(b, "response.output_text.delta")
		}
		b = a.itemRef(b, i)
		b = append(b, `,"delta":`...)
		b = appendJSONBytes(b, text)
		if reasoning {
			return append(b, "}\n\n"...)
		}
		return append(b, `,"logprobs":[]}`+"\n\n"...)
	}
	b = a.event(b, "content_block_delta")
	b = append(b, `{"type":"content_block_delta","index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	if reasoning {
		b = append(b, `,"delta":{"type":"thinking_delta","thinking":`...)
	} else {
		b = append(b, `,"delta":{"type":"text_delta","text":`...)
	}
	b = appendJSONBytes(b, text)
	return append(b, "}}\n\n"...)
}

// appendEnd appends the events after the last token.
func (a *apiEncoder) appendEnd(b []byte, reason string, completion, reasoned int) []byte {
	if n := len(a.blocks); n > 0 && a.blocks[n-1].open {
		b = a.appendBlockEnd(b, n-1)
	}
	if a.api == apiResponses {
		status, name := "completed", "response.completed"
		if reason == "length" {
			// OpenAI reports a response cut by max_output_tokens as status "incomplete", in a
			// response.incomplete event.
			status, name = "incomplete", "response.incomplete"
		}
		b = a.respEvent(b, name)
		b = append(b, `,"response":`...)
		b = a.appendResponse(b, status, completion, reasoned, true)
		return append(b, "}\n\n"...)
	}
	b = a.event(b, "message_delta")
	b = append(b, `{"type":"message_delta","delta":{"stop_reason":`...)
	b = appendJSONString(b, anthropicStop(reason))
	b = append(b, `,"stop_sequence":null},"usage":{"output_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, "}}\n\n"...)
	b = a.event(b, "message_stop")
	return append(b, `{"type":"message_stop"}`+"\n\n"...)
}

// appendError appends the event that ends a started stream with an error.
func (a *apiEncoder) appendError(b []byte, msg string) []byte {
	if a.api == apiResponses {
		b = a.respEvent(b, "error")
		b = append(b, `,"code":"server_error","message":`...)
		b = appendJSONString(b, msg)
		return append(b, `,"param":null}`+"\n\n"...)
	}
	b = a.event(b, "error")
	b = append(b, `{"type":"error","error":{"type":"api_error","message":`...)
	b = appendJSONString(b, msg)
	return append(b, "}}\n\n"...)
}

// appendWhole appends a non-streamed Responses or Messages body of output text whose first
// reasoned tokens' text, reasoningText, is reasoning.
func (a *apiEncoder) appendWhole(b, reasoningText, answerText []byte, reason string, completion, reasoned int) []byte {
	a.reasoning, a.answer = reasoningText, answerText
	if len(reasoningText) > 0 {
		a.blocks = append(a.blocks, apiBlock{reasoning: true})
	}
	a.blocks = append(a.blocks, apiBlock{})
	if a.api == apiResponses {
		status := "completed"
		if reason == "length" {
			status = "incomplete"
		}
		return append(a.appendResponse(b, status, completion, reasoned, true), '\n')
	}
	b = append(b, `{"id":`...)
	b = appendJSONString(b, a.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendJSONString(b, a.model)
	b = append(b, `,"content":[`...)
	if len(reasoningText) > 0 {
		b = append(b, `{"type":"thinking","thinking":`...)
		b = appendJSONBytes(b, reasoningText)
		b = append(b, `,"signature":`...)
		b = appendJSONString(b, a.suffix)
		b = append(b, "},"...)
	}
	b = append(b, `{"type":"text","text":`...)
	b = appendJSONBytes(b, answerText)
	b = append(b, `}],"stop_reason":`...)
	b = appendJSONString(b, anthropicStop(reason))
	b = append(b, `,"stop_sequence":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(a.prompt), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	return append(b, "}}\n"...)
}

func newAPIEncoder(api wireAPI, g *generation) *apiEncoder {
	return &apiEncoder{api: api, id: g.respID, suffix: g.respID[len(api.respPrefix()):],
		created: g.created, model: g.req.model, prompt: g.req.promptTokens}
}

// writeAPIWhole waits for the whole output and writes one Responses or Messages body.
func (e *Engine) writeAPIWhole(ctx context.Context, w http.ResponseWriter, g *generation, api wireAPI) bool {
	total, reason, ok := e.awaitEnd(ctx, g)
	if !ok {
		return false
	}
	r := g.reasoningTokens(total)
	w.Header().Set("Content-Type", "application/json")
	w.Write(newAPIEncoder(api, g).appendWhole(nil, appendOutput(nil, g.base, 0, r), appendOutput(nil, g.base, r, total-r), reason, total, r))
	return true
}

// writeAPIStream streams a Responses or Messages response; it reports whether the request
// finished. The mid-stream faults are those of the other streams (injectMid).
func (e *Engine) writeAPIStream(ctx context.Context, w http.ResponseWriter, g *generation, api wireAPI) bool {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := newAPIEncoder(api, g)
	buf := enc.appendStart(make([]byte, 0, 1024))
	w.Write(buf)
	rc.Flush()
	var piece []byte
	return e.emitLoop(ctx, w, rc, g, enc.appendError, func(pe pendingEmit, completion int) (last, ok bool) {
		// One emission is one delta, split where the reasoning ends.
		buf = buf[:0]
		for start := pe.start; start < completion; {
			stop, reasoning := completion, start < g.reasoning
			if reasoning {
				stop = min(completion, g.reasoning)
			}
			piece = appendOutput(piece[:0], g.base, start, stop-start)
			buf = enc.appendPiece(buf, piece, reasoning)
			start = stop
		}
		if pe.final {
			buf = enc.appendEnd(buf, pe.reason, completion, g.reasoningTokens(completion))
		}
		_, err := w.Write(buf)
		return pe.final, pe.final || err == nil
	})
}
