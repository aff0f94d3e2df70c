package refengine

import (
	"context"
	"net/http"
	"strconv"
)

// The Responses and Messages encoders (their framings are cited in apis.go). An apiEncoder
// tracks a response's output as a sequence of blocks (Responses: output items; Messages:
// content blocks): with the engine's reasoning mode (Config.ReasoningFraction) a reasoning
// block (a "reasoning" item of reasoning_text, a "thinking" block) before the answer's (a
// "message" item of output_text, a "text" block). Its apiFormat, one per API, writes the
// blocks as that API's events and bodies.

// apiEncoder writes the events of one Responses or Messages stream, or its whole body.
type apiEncoder struct {
	id      string // response id
	suffix  string // the id without its prefix, for item ids
	created int64
	model   string
	prompt  int
	cached  int // prompt tokens found in the prefix cache, set before the usage is written
	format  apiFormat

	blocks    []apiBlock
	reasoning []byte // all reasoning text so far
	answer    []byte // all answer text so far
}

// apiBlock is one output block.
type apiBlock struct {
	reasoning bool
	open      bool
}

// apiFormat is one API's framing of the blocks an apiEncoder tracks: responsesFormat or
// messagesFormat. Each method appends to b and returns it.
type apiFormat interface {
	// appendStart appends the events sent when the request is accepted.
	appendStart(b []byte) []byte
	// appendBlockStart opens block i.
	appendBlockStart(b []byte, i int) []byte
	// appendBlockEnd closes block i, whose whole text is text.
	appendBlockEnd(b []byte, i int, text []byte) []byte
	// appendDelta appends one piece of block i's text.
	appendDelta(b []byte, i int, text []byte) []byte
	// appendEnd appends the events after the last token, the blocks closed.
	appendEnd(b []byte, reason string, completion, reasoned int) []byte
	// appendError appends the event that ends a started stream with an error.
	appendError(b []byte, msg string) []byte
	// appendWhole appends the non-streamed body of the encoder's blocks.
	appendWhole(b []byte, reason string, completion, reasoned int) []byte
}

func newAPIEncoder(api wireAPI, g *generation) *apiEncoder {
	a := &apiEncoder{id: g.respID, suffix: g.respID[len(api.respPrefix()):],
		created: g.created, model: g.req.model, prompt: g.req.promptTokens}
	if api == apiResponses {
		a.format = &responsesFormat{a: a}
	} else {
		a.format = messagesFormat{a: a}
	}
	return a
}

// sseEvent starts an SSE event with an "event:" line naming it.
func sseEvent(b []byte, name string) []byte {
	b = append(b, "event: "...)
	b = append(b, name...)
	return append(b, "\ndata: "...)
}

func (a *apiEncoder) textOf(reasoning bool) []byte {
	if reasoning {
		return append([]byte{}, a.reasoning...)
	}
	return append([]byte{}, a.answer...)
}

// appendStart appends the events sent when the request is accepted.
func (a *apiEncoder) appendStart(b []byte) []byte { return a.format.appendStart(b) }

// appendBlockEnd closes block i.
func (a *apiEncoder) appendBlockEnd(b []byte, i int) []byte {
	a.blocks[i].open = false
	return a.format.appendBlockEnd(b, i, a.textOf(a.blocks[i].reasoning))
}

// appendPiece appends one piece of output text, opening a block of its kind if needed.
func (a *apiEncoder) appendPiece(b, text []byte, reasoning bool) []byte {
	if n := len(a.blocks); n == 0 || a.blocks[n-1].reasoning != reasoning {
		if n > 0 && a.blocks[n-1].open {
			b = a.appendBlockEnd(b, n-1)
		}
		a.blocks = append(a.blocks, apiBlock{reasoning: reasoning, open: true})
		b = a.format.appendBlockStart(b, n)
	}
	if reasoning {
		a.reasoning = append(a.reasoning, text...)
	} else {
		a.answer = append(a.answer, text...)
	}
	return a.format.appendDelta(b, len(a.blocks)-1, text)
}

// appendEnd appends the events after the last token.
func (a *apiEncoder) appendEnd(b []byte, reason string, completion, reasoned int) []byte {
	if n := len(a.blocks); n > 0 && a.blocks[n-1].open {
		b = a.appendBlockEnd(b, n-1)
	}
	return a.format.appendEnd(b, reason, completion, reasoned)
}

// appendError appends the event that ends a started stream with an error.
func (a *apiEncoder) appendError(b []byte, msg string) []byte { return a.format.appendError(b, msg) }

// appendWhole appends a non-streamed Responses or Messages body of output text whose first
// reasoned tokens' text, reasoningText, is reasoning.
func (a *apiEncoder) appendWhole(b, reasoningText, answerText []byte, reason string, completion, reasoned int) []byte {
	a.reasoning, a.answer = reasoningText, answerText
	if len(reasoningText) > 0 {
		a.blocks = append(a.blocks, apiBlock{reasoning: true})
	}
	a.blocks = append(a.blocks, apiBlock{})
	return a.format.appendWhole(b, reason, completion, reasoned)
}

// writeAPIWhole waits for the whole output and writes one Responses or Messages body.
func (e *Engine) writeAPIWhole(ctx context.Context, w http.ResponseWriter, g *generation, api wireAPI) bool {
	total, reason, ok := e.awaitEnd(ctx, g)
	if !ok {
		return false
	}
	r := g.reasoningTokens(total)
	w.Header().Set("Content-Type", "application/json")
	a := newAPIEncoder(api, g)
	a.cached = e.cachedOf(g.s)
	w.Write(a.appendWhole(nil, appendOutput(nil, g.base, 0, r), appendOutput(nil, g.base, r, total-r), reason, total, r))
	return true
}

// responsesFormat frames the Responses API: output items, typed events with sequence
// numbers, the response object at the start and the end.
type responsesFormat struct {
	a   *apiEncoder
	seq int // sequence_number
}

func (f *responsesFormat) itemID(reasoning bool) string {
	if reasoning {
		return "rs_" + f.a.suffix
	}
	return "msg_" + f.a.suffix
}

// appendItem appends a Responses output item with its text (nil: still empty).
func (f *responsesFormat) appendItem(b []byte, reasoning bool, status string, text []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, f.itemID(reasoning))
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
func (f *responsesFormat) appendResponse(b []byte, status string, completion, reasoned int, done bool) []byte {
	a := f.a
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
			b = f.appendItem(b, bl.reasoning, "completed", a.textOf(bl.reasoning))
		}
	}
	b = append(b, `],"usage":`...)
	if !done {
		return append(b, "null}"...)
	}
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(a.prompt), 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(a.cached), 10)
	b = append(b, `},"output_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(reasoned), 10)
	b = append(b, `},"total_tokens":`...)
	b = strconv.AppendInt(b, int64(a.prompt+completion), 10)
	return append(b, "}}"...)
}

// respEvent starts a Responses event of type t with its sequence number.
func (f *responsesFormat) respEvent(b []byte, t string) []byte {
	b = sseEvent(b, t)
	b = append(b, `{"type":`...)
	b = appendJSONString(b, t)
	b = append(b, `,"sequence_number":`...)
	b = strconv.AppendInt(b, int64(f.seq), 10)
	f.seq++
	return b
}

// itemRef appends the item, output and content indexes of block i.
func (f *responsesFormat) itemRef(b []byte, i int) []byte {
	b = append(b, `,"item_id":`...)
	b = appendJSONString(b, f.itemID(f.a.blocks[i].reasoning))
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	return append(b, `,"content_index":0`...)
}

func (f *responsesFormat) appendStart(b []byte) []byte {
	for _, t := range []string{"response.created", "response.in_progress"} {
		b = f.respEvent(b, t)
		b = append(b, `,"response":`...)
		b = f.appendResponse(b, "in_progress", 0, 0, false)
		b = append(b, "}\n\n"...)
	}
	return b
}

func (f *responsesFormat) appendBlockStart(b []byte, i int) []byte {
	reasoning := f.a.blocks[i].reasoning
	b = f.respEvent(b, "response.output_item.added")
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"item":`...)
	b = f.appendItem(b, reasoning, "in_progress", nil)
	b = append(b, "}\n\n"...)
	if reasoning {
		return b
	}
	b = f.respEvent(b, "response.content_part.added")
	b = f.itemRef(b, i)
	return append(b, `,"part":{"type":"output_text","text":"","annotations":[]}}`+"\n\n"...)
}

func (f *responsesFormat) appendBlockEnd(b []byte, i int, text []byte) []byte {
	reasoning := f.a.blocks[i].reasoning
	if reasoning {
		b = f.respEvent(b, "response.reasoning_text.done")
	} else {
		b = f.respEvent(b, "response.output_text.done")
	}
	b = f.itemRef(b, i)
	b = append(b, `,"text":`...)
	b = appendJSONBytes(b, text)
	b = append(b, "}\n\n"...)
	if !reasoning {
		b = f.respEvent(b, "response.content_part.done")
		b = f.itemRef(b, i)
		b = append(b, `,"part":{"type":"output_text","text":`...)
		b = appendJSONBytes(b, text)
		b = append(b, `,"annotations":[]}}`+"\n\n"...)
	}
	b = f.respEvent(b, "response.output_item.done")
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"item":`...)
	b = f.appendItem(b, reasoning, "completed", text)
	return append(b, "}\n\n"...)
}

func (f *responsesFormat) appendDelta(b []byte, i int, text []byte) []byte {
	reasoning := f.a.blocks[i].reasoning
	if reasoning {
		b = f.respEvent(b, "response.reasoning_text.delta")
	} else {
		b = f.respEvent(b, "response.output_text.delta")
	}
	b = f.itemRef(b, i)
	b = append(b, `,"delta":`...)
	b = appendJSONBytes(b, text)
	if reasoning {
		return append(b, "}\n\n"...)
	}
	return append(b, `,"logprobs":[]}`+"\n\n"...)
}

func (f *responsesFormat) appendEnd(b []byte, reason string, completion, reasoned int) []byte {
	status, name := "completed", "response.completed"
	if reason == "length" {
		// OpenAI reports a response cut by max_output_tokens as status "incomplete", in a
		// response.incomplete event.
		status, name = "incomplete", "response.incomplete"
	}
	b = f.respEvent(b, name)
	b = append(b, `,"response":`...)
	b = f.appendResponse(b, status, completion, reasoned, true)
	return append(b, "}\n\n"...)
}

func (f *responsesFormat) appendError(b []byte, msg string) []byte {
	b = f.respEvent(b, "error")
	b = append(b, `,"code":"server_error","message":`...)
	b = appendJSONString(b, msg)
	return append(b, `,"param":null}`+"\n\n"...)
}

func (f *responsesFormat) appendWhole(b []byte, reason string, completion, reasoned int) []byte {
	status := "completed"
	if reason == "length" {
		status = "incomplete"
	}
	return append(f.appendResponse(b, status, completion, reasoned, true), '\n')
}

// messagesFormat frames Anthropic's Messages API: content blocks between message_start and
// message_stop.
type messagesFormat struct{ a *apiEncoder }

func (f messagesFormat) appendStart(b []byte) []byte {
	a := f.a
	b = sseEvent(b, "message_start")
	b = append(b, `{"type":"message_start","message":{"id":`...)
	b = appendJSONString(b, a.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendJSONString(b, a.model)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(a.prompt), 10)
	b = append(b, `,"output_tokens":0}}}`+"\n\n"...)
	b = sseEvent(b, "ping")
	return append(b, `{"type":"ping"}`+"\n\n"...)
}

func (f messagesFormat) appendBlockStart(b []byte, i int) []byte {
	b = sseEvent(b, "content_block_start")
	b = append(b, `{"type":"content_block_start","index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	if f.a.blocks[i].reasoning {
		return append(b, `,"content_block":{"type":"thinking","thinking":""}}`+"\n\n"...)
	}
	return append(b, `,"content_block":{"type":"text","text":""}}`+"\n\n"...)
}

func (f messagesFormat) appendBlockEnd(b []byte, i int, _ []byte) []byte {
	if f.a.blocks[i].reasoning {
		// As vLLM's converter does, a thinking block ends with its signature.
		b = sseEvent(b, "content_block_delta")
		b = append(b, `{"type":"content_block_delta","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"delta":{"type":"signature_delta","signature":`...)
		b = appendJSONString(b, f.a.suffix)
		b = append(b, "}}\n\n"...)
	}
	b = sseEvent(b, "content_block_stop")
	b = append(b, `{"type":"content_block_stop","index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	return append(b, "}\n\n"...)
}

func (f messagesFormat) appendDelta(b []byte, i int, text []byte) []byte {
	b = sseEvent(b, "content_block_delta")
	b = append(b, `{"type":"content_block_delta","index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	if f.a.blocks[i].reasoning {
		b = append(b, `,"delta":{"type":"thinking_delta","thinking":`...)
	} else {
		b = append(b, `,"delta":{"type":"text_delta","text":`...)
	}
	b = appendJSONBytes(b, text)
	return append(b, "}}\n\n"...)
}

func (f messagesFormat) appendEnd(b []byte, reason string, completion, _ int) []byte {
	b = sseEvent(b, "message_delta")
	b = append(b, `{"type":"message_delta","delta":{"stop_reason":`...)
	b = appendJSONString(b, anthropicStop(reason))
	b = append(b, `,"stop_sequence":null},"usage":`...)
	b = f.a.appendCacheUsage(b)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	b = append(b, "}}\n\n"...)
	b = sseEvent(b, "message_stop")
	return append(b, `{"type":"message_stop"}`+"\n\n"...)
}

func (f messagesFormat) appendError(b []byte, msg string) []byte {
	b = sseEvent(b, "error")
	b = append(b, `{"type":"error","error":{"type":"api_error","message":`...)
	b = appendJSONString(b, msg)
	return append(b, "}}\n\n"...)
}

func (f messagesFormat) appendWhole(b []byte, reason string, completion, _ int) []byte {
	a := f.a
	b = append(b, `{"id":`...)
	b = appendJSONString(b, a.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendJSONString(b, a.model)
	b = append(b, `,"content":[`...)
	if len(a.reasoning) > 0 {
		b = append(b, `{"type":"thinking","thinking":`...)
		b = appendJSONBytes(b, a.reasoning)
		b = append(b, `,"signature":`...)
		b = appendJSONString(b, a.suffix)
		b = append(b, "},"...)
	}
	b = append(b, `{"type":"text","text":`...)
	b = appendJSONBytes(b, a.answer)
	b = append(b, `}],"stop_reason":`...)
	b = appendJSONString(b, anthropicStop(reason))
	b = append(b, `,"stop_sequence":null,"usage":`...)
	b = a.appendCacheUsage(b)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	return append(b, "}}\n"...)
}

// appendCacheUsage opens a Messages usage object with the prompt as Anthropic splits it:
// input_tokens after the cached prefix, cache_read_input_tokens read from the prefix cache
// and cache_creation_input_tokens (0: the engine caches every prompt, writes are not billed
// apart), so that their sum is the prompt.
func (a *apiEncoder) appendCacheUsage(b []byte) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(a.prompt-a.cached), 10)
	b = append(b, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":`...)
	return strconv.AppendInt(b, int64(a.cached), 10)
}
