package refengine

import (
	"context"
	"net/http"
	"strconv"
)

// A generation request is served in three steps: admission (handleGenerate in server.go:
// limits, body, validation, faults before the response, submission to the scheduler), then
// writeWhole (writeAPIWhole for Responses and Messages, apis_encode.go) for a non-streamed
// response or writeStreamed (stream.go) in the API's framing.

// generation is an admitted request on its way out.
type generation struct {
	req     *request
	chat    bool
	respID  string
	base    uint64
	created int64
	s       *seq
	st      *stream
	plan    *faultPlan
	// reasoning is how many leading output tokens are reasoning (chat, Config.ReasoningFraction).
	reasoning int
	// out says what the output tokens read as (words, or an answer: output.go).
	out *outPlan
}

// reasoningTokens is the reasoning part of the first n output tokens.
func (g *generation) reasoningTokens(n int) int { return min(n, g.reasoning) }

// awaitEnd waits for the last of g's emissions and returns the output tokens and the finish
// reason; ok is false when ctx ended first.
func (e *Engine) awaitEnd(ctx context.Context, g *generation) (total int, reason string, ok bool) {
	var pend []pendingEmit
	for reason == "" {
		if !e.wait(ctx, g.st) {
			return 0, "", false
		}
		pend = g.st.take(pend)
		for _, p := range pend {
			total = p.start + p.n
			if p.final {
				reason = p.reason
			}
		}
	}
	return total, reason, true
}

// writeWhole waits for the whole output and writes one JSON response; it reports whether the
// request finished.
func (e *Engine) writeWhole(ctx context.Context, w http.ResponseWriter, g *generation) bool {
	total, reason, ok := e.awaitEnd(ctx, g)
	if !ok {
		return false
	}
	var text []byte
	w.Header().Set("Content-Type", "application/json")
	if g.out.ans != nil && g.chat {
		w.Write(e.appendAnswerResponse(nil, g, reason, total))
		return true
	}
	text = g.out.appendText(text, 0, total)
	reason = g.out.finish(total, reason)
	if r := g.reasoningTokens(total); r > 0 {
		w.Write(e.appendReasoningResponse(nil, g, text, reason, total, r))
		return true
	}
	w.Write(appendFullResponse(nil, g.chat, g.respID, g.created, g.req.model, text, reason, g.req.promptTokens, e.cachedDetail(g), total))
	return true
}

// appendReasoningResponse appends a non-streamed chat response whose first r tokens are
// reasoning: message.reasoning_content (the personality's field) before content, or, where
// the personality hides reasoning, only the answer with reasoning_tokens in the usage.
func (e *Engine) appendReasoningResponse(b []byte, g *generation, text []byte, reason string, total, r int) []byte {
	p := e.wire
	answer := g.out.appendText(nil, r, total-r)
	b = appendHead(b, g.respID, "chat.completion", g.created, g.req.model)
	b = append(b, `{"index":0,"message":{"role":"assistant","content":`...)
	b = appendJSONBytes(b, answer)
	if !p.hideReasoning {
		field := p.reasoning
		if field == "" {
			field = "reasoning_content"
		}
		b = append(b, `,"`+field+`":`...)
		b = appendJSONBytes(b, appendOutput(nil, g.base, 0, r))
	}
	b = append(b, `,"tool_calls":[]},"logprobs":null,"finish_reason":`...)
	b = appendJSONString(b, reason)
	b = append(b, `,"stop_reason":null}],"usage":`...)
	b = appendUsage(b, g.req.promptTokens, e.cachedDetail(g), total)
	b = b[:len(b)-1]
	b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(r), 10)
	return append(b, "}}}\n"...)
}

// appendAnswerResponse appends a non-streamed chat response with an answer (output.go):
// content (null when empty), the reasoning field as appendReasoningResponse writes it, and
// the assembled tool calls.
func (e *Engine) appendAnswerResponse(b []byte, g *generation, reason string, total int) []byte {
	p := e.wire
	o := g.out.output(total, reason, true)
	b = appendHead(b, g.respID, "chat.completion", g.created, g.req.model)
	b = append(b, `{"index":0,"message":{"role":"assistant","content":`...)
	if o.Content == "" && len(o.ToolCalls) > 0 {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, o.Content)
	}
	r := g.reasoningTokens(total)
	if r > 0 && !p.hideReasoning {
		field := p.reasoning
		if field == "" {
			field = "reasoning_content"
		}
		b = append(b, `,"`+field+`":`...)
		b = appendJSONString(b, o.Reasoning)
	}
	b = append(b, `,"tool_calls":[`...)
	for i, c := range o.ToolCalls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendJSONString(b, c.ID)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = appendJSONString(b, c.Name)
		b = append(b, `,"arguments":`...)
		b = appendJSONString(b, c.Arguments)
		b = append(b, "}}"...)
	}
	b = append(b, `]},"logprobs":null,"finish_reason":`...)
	b = appendJSONString(b, o.FinishReason)
	b = append(b, `,"stop_reason":null}],"usage":`...)
	b = appendUsage(b, g.req.promptTokens, e.cachedDetail(g), total)
	if r > 0 {
		b = b[:len(b)-1]
		b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
		b = strconv.AppendInt(b, int64(r), 10)
		b = append(b, "}}"...)
	}
	return append(b, "}\n"...)
}

// cachedOf is the prompt tokens s found in the prefix cache when it was first scheduled
// (Timeline.CachedTokens), the engine's ground truth of its reuse.
func (e *Engine) cachedOf(s *seq) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return s.tl.CachedTokens
}

// cachedDetail is g's cached prompt tokens for usage.prompt_tokens_details, or -1 where the
// personality reports none.
func (e *Engine) cachedDetail(g *generation) int {
	if !e.wire.cachedDetails {
		return -1
	}
	return e.cachedOf(g.s)
}
