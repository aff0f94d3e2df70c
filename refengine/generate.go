package refengine

import (
	"context"
	"io"
	"net/http"
	"strconv"
)

// A generation request is served in three steps: admission (handleGenerate in server.go:
// limits, body, validation, faults before the response, submission to the scheduler), then
// writeWhole for a non-streamed response or writeStream in the engine's wire personality.

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
	w.Write(appendFullResponse(nil, g.chat, g.respID, g.created, g.req.model, text, reason, g.req.promptTokens, total))
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
	b = appendUsage(b, g.req.promptTokens, total)
	b = b[:len(b)-1]
	b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(r), 10)
	return append(b, "}}}\n"...)
}

// streamOut is the state of one streamed response.
type streamOut struct {
	e    *Engine
	w    http.ResponseWriter
	rc   *http.ResponseController
	g    *generation
	enc  *wireEncoder
	p    *personality
	buf  []byte
	text []byte
	cont bool // per-chunk usage
	// tools holds the delta.tool_calls entries of one event.
	tools []byte
}

func (o *streamOut) usageAt(n int) int {
	switch {
	case o.cont:
		return n
	case o.p.usageNull && o.g.req.includeUsage:
		return usageNil
	}
	return usageOmit
}

func (o *streamOut) write(ev *wireEvent) bool {
	o.buf = o.enc.appendEvent(o.buf[:0], ev)
	_, err := o.w.Write(o.buf)
	return err == nil
}

// tokens writes output tokens [start, start+n) of one emission: one chunk, split where the
// reasoning ends, or one event per token for a per-token personality (each flushed, so a
// speculative pass arrives as a burst). finish is set on the last chunk when the personality
// puts the finish reason there; lastUsage is the usage that chunk carries instead of usageAt.
func (o *streamOut) tokens(start, n int, finish string, lastUsage int) bool {
	end := start + n
	a, z := o.g.out.answerRange()
	toolAnswer := o.g.chat && o.g.out.ans != nil && o.g.out.ans.kind == ansTool
	for start < end {
		stop := end
		reasoning := start < o.g.reasoning
		if reasoning {
			stop = min(end, o.g.reasoning)
		}
		tool := toolAnswer && start >= a && start < z
		if tool {
			stop = min(stop, z)
		} else if toolAnswer && start < a {
			stop = min(stop, a)
		}
		if o.p.perToken {
			stop = start + 1
		}
		if reasoning && o.p.hideReasoning {
			start = stop
			continue
		}
		ev := wireEvent{reasoning: reasoning, usage: o.usageAt(stop), reasoned: o.g.reasoningTokens(stop)}
		if tool {
			last := stop == end && finish != ""
			o.tools = o.g.out.appendToolDeltas(o.tools[:0], start-a, stop-a, last)
			if len(o.tools) == 0 && !last {
				// No visible delta yet (a function name still incomplete): vLLM sends no
				// chunk for such a step.
				start = stop
				continue
			}
			ev.tools = o.tools
		} else {
			o.text = o.g.out.appendText(o.text[:0], start, stop-start)
			ev.text = o.text
		}
		if stop == end {
			ev.finish = finish
			if lastUsage != usageOmit {
				ev.usage = lastUsage
			}
		}
		if !o.write(&ev) {
			return false
		}
		if o.p.perToken && stop < end {
			o.rc.Flush()
		}
		start = stop
	}
	return true
}

// writeStream streams the output as SSE in the engine's wire personality; it reports whether
// the request finished.
func (e *Engine) writeStream(ctx context.Context, w http.ResponseWriter, g *generation) bool {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	p := e.wire
	o := &streamOut{e: e, w: w, rc: http.NewResponseController(w), g: g, p: p, buf: make([]byte, 0, 1024),
		enc:  newWireEncoder(p, g.chat, g.respID, g.created, g.req.model, g.req.promptTokens),
		cont: g.req.continuousUsage && p.continuous}
	// Headers go out at once (as uvicorn does for vLLM's streaming responses).
	roleSent := !g.chat || p.prelude == preludeNone
	if g.chat && p.prelude == preludeImmediate {
		o.write(&wireEvent{role: true, usage: o.usageAt(0)})
		roleSent = true
	}
	o.rc.Flush()
	return e.emitLoop(ctx, w, o.rc, g, o.enc.appendStreamError, func(pe pendingEmit, completion int) (last, ok bool) {
		if !roleSent {
			roleSent = true
			o.write(&wireEvent{role: true, usage: o.usageAt(0)})
		}
		finish, lastUsage := "", usageOmit
		if pe.final {
			pe.reason = g.out.finish(completion, pe.reason)
		}
		if pe.final && !p.finishSeparate {
			finish = pe.reason
			if p.usage == usageLastChoice && g.req.includeUsage {
				lastUsage = completion
			}
		}
		if !o.tokens(pe.start, pe.n, finish, lastUsage) {
			return false, false
		}
		if !pe.final {
			return false, true
		}
		e.finishStream(o, pe.reason, completion)
		if g.plan.noDone {
			e.faultCount("no-done")
		} else {
			io.WriteString(w, doneEvent)
		}
		return true, true
	})
}

// emitLoop is the emission loop of every streamed response, whatever its framing: it waits
// for the sequence's emissions and hands each to emit, which writes it (last: it ended the
// response; ok false: the client is gone). Once the stream has sent something and passed the
// plan's mid-stream threshold it first injects the plan's fault: an error event in the
// framing's own shape (errorEvent), or injectMid's reset, stall or malformed data. It flushes
// after each batch of emissions, records what was sent, and reports whether the request
// finished.
func (e *Engine) emitLoop(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, g *generation, errorEvent func(b []byte, msg string) []byte, emit func(pe pendingEmit, completion int) (last, ok bool)) bool {
	s, plan := g.s, g.plan
	threshold := max(1, int(plan.midAt*float64(s.target)))
	midDone := !plan.midStream()
	sent := 0
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
					w.Write(errorEvent(nil, "injected fault: the engine failed while generating"))
					rc.Flush()
					e.abort(s)
					return true // the request ended (with an error) as planned
				}
				if !e.injectMid(ctx, w, rc, plan, g.respID, s) {
					return false
				}
			}
			last, ok := emit(pe, completion)
			if !ok {
				return false
			}
			sent++
			if last {
				rc.Flush()
				e.noteSent(s, sent)
				return true
			}
		}
		rc.Flush()
		e.noteSent(s, sent)
	}
}

// finishStream writes what follows the last token: a separate finish chunk and the final
// usage chunk, as the personality does.
func (e *Engine) finishStream(o *streamOut, reason string, completion int) {
	p, g := o.p, o.g
	if p.finishSeparate {
		ev := wireEvent{finish: reason, usage: o.usageAt(completion), reasoned: g.reasoningTokens(completion)}
		if p.usage == usageOnFinish {
			ev.usage = completion
		}
		if p.timings {
			ev.timings = e.timings(g.s)
		}
		o.write(&ev)
	}
	if p.usage == usageFinalChunk && g.req.includeUsage {
		o.buf = o.enc.appendUsageEvent(o.buf[:0], completion, g.reasoningTokens(completion))
		o.w.Write(o.buf)
	}
}

// timings are llama.cpp's prompt and generation times of s, from its timeline.
func (e *Engine) timings(s *seq) *wireTimings {
	e.mu.Lock()
	defer e.mu.Unlock()
	tl := s.tl
	t := &wireTimings{promptN: tl.PromptTokens, predictedN: tl.OutputTokens}
	if n := len(tl.Emissions); n > 0 {
		t.promptMs = float64(tl.Emissions[0].At-tl.Arrival) / 1e6
		t.predictedMs = float64(tl.Emissions[n-1].At-tl.Emissions[0].At) / 1e6
	}
	return t
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
	b = appendUsage(b, g.req.promptTokens, total)
	if r > 0 {
		b = b[:len(b)-1]
		b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
		b = strconv.AppendInt(b, int64(r), 10)
		b = append(b, "}}"...)
	}
	return append(b, "}\n"...)
}
