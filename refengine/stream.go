package refengine

import (
	"context"
	"io"
	"net/http"
)

// One stream writer serves every API. writeStreamed sends the headers, lets the API's
// streamFraming write what precedes the first token, and runs emitLoop, which waits for the
// sequence's emissions, injects the mid-stream faults and hands each emission to the
// framing. The framings: chatStream for chat and completions (the engine's wire personality,
// personality.go), blockStream for Responses and Messages (apis_encode.go).

// streamFraming is one API's framing of a streamed response.
type streamFraming interface {
	// open writes what the stream sends once the headers are out, before any token (it may
	// write nothing); w and rc are the response's.
	open(w http.ResponseWriter, rc *http.ResponseController)
	// emit writes one emission, output tokens [pe.start, completion); last reports that it
	// ended the response, ok false that the client is gone.
	emit(pe pendingEmit, completion int) (last, ok bool)
	// appendError appends the event that ends a started stream with an error.
	appendError(b []byte, msg string) []byte
}

// framingFor is the stream framing of api for g.
func (e *Engine) framingFor(api wireAPI, g *generation) streamFraming {
	if api == apiResponses || api == apiMessages {
		return &blockStream{e: e, g: g, enc: newAPIEncoder(api, g)}
	}
	return e.newChatStream(g)
}

// writeStreamed streams g's output as SSE in framing f; it reports whether the request
// finished.
func (e *Engine) writeStreamed(ctx context.Context, w http.ResponseWriter, g *generation, f streamFraming) bool {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	f.open(w, rc)
	// Headers go out at once (as uvicorn does for vLLM's streaming responses).
	rc.Flush()
	return e.emitLoop(ctx, w, rc, g, f)
}

// emitLoop is the emission loop of every streamed response, whatever its framing: it waits
// for the sequence's emissions and hands each to f.emit, which writes it (last: it ended the
// response; ok false: the client is gone). Once the stream has sent something and passed the
// plan's mid-stream threshold it first injects the plan's fault: an error event in the
// framing's own shape (f.appendError), or injectMid's reset, stall or malformed data. It
// flushes after each batch of emissions, records what was sent, and reports whether the
// request finished.
func (e *Engine) emitLoop(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, g *generation, f streamFraming) bool {
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
					w.Write(f.appendError(nil, "injected fault: the engine failed while generating"))
					rc.Flush()
					e.abort(s)
					return true // the request ended (with an error) as planned
				}
				if !e.injectMid(ctx, w, rc, plan, g.respID, s) {
					return false
				}
			}
			last, ok := f.emit(pe, completion)
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

// blockStream frames a Responses or Messages stream: its encoder's opening events, one delta
// per emission split where the reasoning ends, and the closing events after the last.
type blockStream struct {
	e     *Engine
	g     *generation
	enc   *apiEncoder
	w     http.ResponseWriter
	buf   []byte
	piece []byte
}

func (o *blockStream) open(w http.ResponseWriter, _ *http.ResponseController) {
	o.w = w
	o.buf = o.enc.appendStart(make([]byte, 0, 1024))
	w.Write(o.buf)
}

func (o *blockStream) appendError(b []byte, msg string) []byte { return o.enc.appendError(b, msg) }

func (o *blockStream) emit(pe pendingEmit, completion int) (last, ok bool) {
	g := o.g
	// One emission is one delta, split where the reasoning ends.
	o.buf = o.buf[:0]
	for start := pe.start; start < completion; {
		stop, reasoning := completion, start < g.reasoning
		if reasoning {
			stop = min(completion, g.reasoning)
		}
		o.piece = appendOutput(o.piece[:0], g.base, start, stop-start)
		o.buf = o.enc.appendPiece(o.buf, o.piece, reasoning)
		start = stop
	}
	if pe.final {
		o.enc.cached = o.e.cachedOf(g.s)
		o.buf = o.enc.appendEnd(o.buf, pe.reason, completion, g.reasoningTokens(completion))
	}
	_, err := o.w.Write(o.buf)
	return pe.final, pe.final || err == nil
}

// chatStream frames a chat or completions stream in the engine's wire personality
// (personality.go): the role prelude where the personality sends one, the tokens of each
// emission, then the finish and usage chunks and [DONE].
type chatStream struct {
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
	// roleSent is set once the role prelude is out (or none is due).
	roleSent bool
}

// newChatStream is the chat or completions framing of g in the engine's wire personality.
func (e *Engine) newChatStream(g *generation) *chatStream {
	p := e.wire
	return &chatStream{e: e, g: g, p: p, buf: make([]byte, 0, 1024),
		enc:      newWireEncoder(p, g.chat, g.respID, g.created, g.req.model, g.req.promptTokens),
		cont:     g.req.continuousUsage && p.continuous,
		roleSent: !g.chat || p.prelude == preludeNone}
}

// open sends the role prelude at once where the personality does.
func (o *chatStream) open(w http.ResponseWriter, rc *http.ResponseController) {
	o.w, o.rc = w, rc
	if o.g.chat && o.p.prelude == preludeImmediate {
		o.write(&wireEvent{role: true, usage: o.usageAt(0)})
		o.roleSent = true
	}
}

func (o *chatStream) appendError(b []byte, msg string) []byte {
	return o.enc.appendStreamError(b, msg)
}

// emit writes one emission: the role prelude if it is still due, the tokens, and after the
// last token the finish and usage chunks and [DONE] (unless the plan drops it).
func (o *chatStream) emit(pe pendingEmit, completion int) (last, ok bool) {
	e, g, p := o.e, o.g, o.p
	if o.enc.cached < 0 && p.cachedDetails {
		o.enc.cached = e.cachedOf(g.s) // scheduled by now: its first tokens are out
	}
	if !o.roleSent {
		o.roleSent = true
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
		io.WriteString(o.w, doneEvent)
	}
	return true, true
}

func (o *chatStream) usageAt(n int) int {
	switch {
	case o.cont:
		return n
	case o.p.usageNull && o.g.req.includeUsage:
		return usageNil
	}
	return usageOmit
}

func (o *chatStream) write(ev *wireEvent) bool {
	o.buf = o.enc.appendEvent(o.buf[:0], ev)
	_, err := o.w.Write(o.buf)
	return err == nil
}

// tokens writes output tokens [start, start+n) of one emission: one chunk, split where the
// reasoning ends, or one event per token for a per-token personality (each flushed, so a
// speculative pass arrives as a burst). finish is set on the last chunk when the personality
// puts the finish reason there; lastUsage is the usage that chunk carries instead of usageAt.
func (o *chatStream) tokens(start, n int, finish string, lastUsage int) bool {
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

// finishStream writes what follows the last token: a separate finish chunk and the final
// usage chunk, as the personality does.
func (e *Engine) finishStream(o *chatStream, reason string, completion int) {
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
	// llama.cpp's prompt_n counts only the tokens it evaluated, cache_n those it reused.
	t := &wireTimings{cacheN: tl.CachedTokens, promptN: tl.PromptTokens - tl.CachedTokens, predictedN: tl.OutputTokens,
		draftN: tl.SpecDraftTokens, draftAccepted: tl.SpecAcceptedTokens}
	if n := len(tl.Emissions); n > 0 {
		t.promptMs = float64(tl.Emissions[0].At-tl.Arrival) / 1e6
		t.predictedMs = float64(tl.Emissions[n-1].At-tl.Emissions[0].At) / 1e6
	}
	return t
}
