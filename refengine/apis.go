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

// apiEncoder writes the events of one Responses or Messages stream.
type apiEncoder struct {
	api     wireAPI
	id      string // response id
	itemID  string // Responses: the message item's id
	created int64
	model   string
	prompt  int
	seq     int // Responses sequence_number
}

func (a *apiEncoder) event(b []byte, name string) []byte {
	b = append(b, "event: "...)
	b = append(b, name...)
	return append(b, "\ndata: "...)
}

// appendResponse appends a Responses response object.
func (a *apiEncoder) appendResponse(b []byte, status string, text []byte, completion int, done bool) []byte {
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
		b = a.appendItem(b, "completed", text)
	}
	b = append(b, `],"usage":`...)
	if !done {
		return append(b, "null}"...)
	}
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(a.prompt), 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":0},"output_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
	b = strconv.AppendInt(b, int64(a.prompt+completion), 10)
	return append(b, "}}"...)
}

func (a *apiEncoder) appendItem(b []byte, status string, text []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, a.itemID)
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

func (a *apiEncoder) itemRef(b []byte) []byte {
	b = append(b, `,"item_id":`...)
	b = appendJSONString(b, a.itemID)
	return append(b, `,"output_index":0,"content_index":0`...)
}

// appendStart appends the events sent when the request is accepted.
func (a *apiEncoder) appendStart(b []byte) []byte {
	if a.api == apiResponses {
		for _, t := range []string{"response.created", "response.in_progress"} {
			b = a.respEvent(b, t)
			b = append(b, `,"response":`...)
			b = a.appendResponse(b, "in_progress", nil, 0, false)
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

// appendFirst appends the events that open the output, before its first text.
func (a *apiEncoder) appendFirst(b []byte) []byte {
	if a.api == apiResponses {
		b = a.respEvent(b, "response.output_item.added")
		b = append(b, `,"output_index":0,"item":`...)
		b = a.appendItem(b, "in_progress", nil)
		b = append(b, "}\n\n"...)
		b = a.respEvent(b, "response.content_part.added")
		b = a.itemRef(b)
		return append(b, `,"part":{"type":"output_text","text":"","annotations":[]}}`+"\n\n"...)
	}
	b = a.event(b, "content_block_start")
	return append(b, `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`+"\n\n"...)
}

// appendDelta appends one piece of output text.
func (a *apiEncoder) appendDelta(b, text []byte) []byte {
	if a.api == apiResponses {
		b = a.respEvent(b, "response.output_text.delta")
		b = a.itemRef(b)
		b = append(b, `,"delta":`...)
		b = appendJSONBytes(b, text)
		return append(b, `,"logprobs":[]}`+"\n\n"...)
	}
	b = a.event(b, "content_block_delta")
	b = append(b, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`...)
	b = appendJSONBytes(b, text)
	return append(b, "}}\n\n"...)
}

// appendEnd appends the events after the last token: text the whole output.
func (a *apiEncoder) appendEnd(b, text []byte, reason string, completion int) []byte {
	if a.api == apiResponses {
		b = a.respEvent(b, "response.output_text.done")
		b = a.itemRef(b)
		b = append(b, `,"text":`...)
		b = appendJSONBytes(b, text)
		b = append(b, `,"logprobs":[]}`+"\n\n"...)
		b = a.respEvent(b, "response.content_part.done")
		b = a.itemRef(b)
		b = append(b, `,"part":{"type":"output_text","text":`...)
		b = appendJSONBytes(b, text)
		b = append(b, `,"annotations":[]}}`+"\n\n"...)
		b = a.respEvent(b, "response.output_item.done")
		b = append(b, `,"output_index":0,"item":`...)
		b = a.appendItem(b, "completed", text)
		b = append(b, "}\n\n"...)
		status := "completed"
		name := "response.completed"
		if reason == "length" {
			// A response cut by max_output_tokens is still complete output for a benchmark:
			// OpenAI reports it as status "incomplete" in a response.incomplete event.
			status, name = "incomplete", "response.incomplete"
		}
		b = a.respEvent(b, name)
		b = append(b, `,"response":`...)
		b = a.appendResponse(b, status, text, completion, true)
		return append(b, "}\n\n"...)
	}
	b = a.event(b, "content_block_stop")
	b = append(b, `{"type":"content_block_stop","index":0}`+"\n\n"...)
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

// appendWhole appends a non-streamed Responses or Messages body.
func (a *apiEncoder) appendWhole(b, text []byte, reason string, completion int) []byte {
	if a.api == apiResponses {
		status := "completed"
		if reason == "length" {
			status = "incomplete"
		}
		return append(a.appendResponse(b, status, text, completion, true), '\n')
	}
	b = append(b, `{"id":`...)
	b = appendJSONString(b, a.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendJSONString(b, a.model)
	b = append(b, `,"content":[{"type":"text","text":`...)
	b = appendJSONBytes(b, text)
	b = append(b, `}],"stop_reason":`...)
	b = appendJSONString(b, anthropicStop(reason))
	b = append(b, `,"stop_sequence":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(a.prompt), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	return append(b, "}}\n"...)
}

func newAPIEncoder(api wireAPI, g *generation) *apiEncoder {
	return &apiEncoder{api: api, id: g.respID, itemID: "msg_" + g.respID[len(api.respPrefix()):],
		created: g.created, model: g.req.model, prompt: g.req.promptTokens}
}

// writeAPIWhole waits for the whole output and writes one Responses or Messages body.
func (e *Engine) writeAPIWhole(ctx context.Context, w http.ResponseWriter, g *generation, api wireAPI) bool {
	var pend []pendingEmit
	var text []byte
	total, reason := 0, ""
	for reason == "" {
		if !e.wait(ctx, g.st) {
			return false
		}
		pend = g.st.take(pend)
		for _, p := range pend {
			text = appendOutput(text, g.base, p.start, p.n)
			total = p.start + p.n
			if p.final {
				reason = p.reason
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(newAPIEncoder(api, g).appendWhole(nil, text, reason, total))
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
	s, plan := g.s, g.plan
	threshold := max(1, int(plan.midAt*float64(s.target)))
	midDone := !plan.midStream()
	sent := 0
	var all, piece []byte
	var pend []pendingEmit
	for {
		if !e.wait(ctx, g.st) {
			return false
		}
		pend = g.st.take(pend)
		for _, pe := range pend {
			completion := pe.start + pe.n
			if !midDone && sent > 0 && completion >= threshold {
				midDone = true
				if plan.errorMid {
					e.faultCount("error-mid")
					w.Write(enc.appendError(nil, "injected fault: the engine failed while generating"))
					rc.Flush()
					e.abort(s)
					return true
				}
				if !e.injectMid(ctx, w, rc, plan, g.respID, s) {
					return false
				}
			}
			buf = buf[:0]
			if sent == 0 {
				buf = enc.appendFirst(buf)
			}
			piece = appendOutput(piece[:0], g.base, pe.start, pe.n)
			all = append(all, piece...)
			buf = enc.appendDelta(buf, piece)
			sent++
			if pe.final {
				buf = enc.appendEnd(buf, all, pe.reason, completion)
				w.Write(buf)
				rc.Flush()
				e.noteSent(s, sent)
				return true
			}
			if _, err := w.Write(buf); err != nil {
				return false
			}
		}
		rc.Flush()
		e.noteSent(s, sent)
	}
}
