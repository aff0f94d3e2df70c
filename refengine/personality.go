package refengine

import (
	"fmt"
	"strconv"
	"strings"
)

// A wire personality reproduces how one server frames a response on the wire: where usage goes
// and when, role preludes, finish chunks, whether a speculative pass is one chunk or one event
// per token, and the extra fields it adds. Each is researched from that server's own source
// (cited below) and is a test fixture with ground truth: the engine's timelines do not depend
// on the personality, only the bytes do.

// Wires are the personality names Config.Wire accepts ("" is vllm).
var Wires = []string{"vllm", "sglang", "llamacpp", "tgi", "ollama", "openai"}

type preludeMode int

const (
	preludeNone       preludeMode = iota // no role-only chunk
	preludeFirstToken                    // the role chunk goes out with the first engine output
	preludeImmediate                     // the role chunk goes out as soon as the request is accepted
)

type usageMode int

const (
	usageFinalChunk usageMode = iota // with include_usage: a last chunk with empty choices
	usageOnFinish                    // always: on the finish chunk (a choice with an empty delta)
	usageLastChoice                  // with include_usage: on the last content chunk
)

// personality is one server's framing.
type personality struct {
	name    string
	prelude preludeMode
	// roleNull writes the prelude's content as null (llama.cpp) instead of "".
	roleNull bool
	// refusal adds "refusal":null to the prelude's delta (OpenAI).
	refusal bool
	// roleEvery names the role in every chat delta (TGI, Ollama).
	roleEvery bool
	// perToken sends every token as its own event, flushed one by one: a speculative pass
	// of k tokens arrives as k events microseconds apart instead of one chunk.
	perToken bool
	// finishSeparate sends finish_reason in a chunk of its own with an empty delta/text.
	finishSeparate bool
	usage          usageMode
	// continuous honours stream_options.continuous_usage_stats (usage on every chunk).
	continuous bool
	// usageNull writes "usage":null on every chunk while include_usage is set.
	usageNull bool
	// stopReason writes vLLM's "stop_reason":null.
	stopReason bool
	// logprobs writes "logprobs":null in every choice.
	logprobs bool
	// fingerprint is the system_fingerprint of every chunk ("" omits it).
	fingerprint string
	// obfuscation pads every content chunk with an "obfuscation" string (OpenAI).
	obfuscation bool
	// timings adds llama.cpp's "timings" object to the finish chunk.
	timings bool
	// cachedDetails reports the prefix-cache hits as usage.prompt_tokens_details.cached_tokens.
	cachedDetails bool
	// reasoning is the delta field of reasoning text; "" streams reasoning as content (a
	// server without a reasoning parser); hideReasoning does not stream it at all and
	// reports it in usage.completion_tokens_details.reasoning_tokens (OpenAI).
	reasoning     string
	hideReasoning bool
	// reasoningUsage reports completion_tokens_details.reasoning_tokens.
	reasoningUsage bool
	// errorFrame is how an error that ends a started stream is sent (see appendStreamError).
	errorFrame errorFrame
}

type errorFrame int

const (
	errorOpenAI   errorFrame = iota // data: {"error":{"message","type","param","code"}}
	errorThenDone                   // the same, then data: [DONE] (vLLM)
	errorTGI                        // data: {"error":"…","error_type":"…"}
	errorLlamacpp                   // data: {"error":{"code","message","type"}}, then the stream ends (no [DONE])
)

var personalities = map[string]*personality{
	// vLLM, vllm/entrypoints/openai/serving_chat.py and serving_completion.py
	// (vllm-project/vllm): chat_completion_stream_generator sends the role chunk
	// (delta {"role":"assistant","content":""}) on the first engine output, then one chunk per
	// engine output (a speculative pass is one chunk of all its accepted tokens), the finish
	// reason on the last content chunk with stop_reason, usage on every chunk when
	// continuous_usage_stats is set, and with include_usage a last chunk with "choices":[] and
	// the usage. Completions: no role chunk, the same usage rules.
	// An exception in the generator is sent as data: {"error":{…}} (create_streaming_error_response)
	// and the stream still ends with [DONE].
	"vllm": {name: "vllm", prelude: preludeFirstToken, usage: usageFinalChunk, continuous: true, cachedDetails: true,
		stopReason: true, logprobs: true, reasoning: "reasoning_content", errorFrame: errorThenDone},
	// SGLang, python/sglang/srt/entrypoints/openai/serving_chat.py (sgl-project/sglang): the
	// role chunk with the first output (is_firsts), content chunks per scheduler output
	// (multi-token under EAGLE speculation), the finish reason in its own chunk with an empty
	// delta, "usage":null on chunks (pydantic dumps the unset field), and with include_usage a
	// final chunk with empty choices (continuous usage is honoured as in vLLM).
	"sglang": {name: "sglang", prelude: preludeFirstToken, finishSeparate: true, usage: usageFinalChunk, cachedDetails: true,
		continuous: true, usageNull: true, logprobs: true, reasoning: "reasoning_content"},
	// llama.cpp server, tools/server/server.cpp (ggml-org/llama.cpp): one event per generated
	// token (with speculative decoding each accepted draft token is still its own result, so
	// a pass arrives as a burst of events), with the first token a chunk
	// {"role":"assistant","content":null} before it,
	// a final chunk with an empty delta, finish_reason, usage and "timings"
	// (prompt_n/prompt_ms/predicted_n/predicted_ms), and a system_fingerprint "b<build>-<hash>"
	// on every chunk. Usage does not depend on include_usage.
	// An error in a started stream is written as an "error:" SSE line (server_sent_event with
	// the "error" prefix), not as data, and no [DONE] follows.
	"llamacpp": {name: "llamacpp", prelude: preludeFirstToken, roleNull: true, perToken: true,
		finishSeparate: true, usage: usageOnFinish, fingerprint: "b0000-llmbench", timings: true,
		reasoning: "reasoning_content", errorFrame: errorLlamacpp},
	// TGI, router/src/server.rs chat_completions / completions (huggingface/
	// text-generation-inference): one event per token, the role in every delta, the finish
	// reason on the last token's chunk, with include_usage the usage on that same last chunk,
	// system_fingerprint "<version>-native". No reasoning parser: reasoning text is content.
	// A generation error is sent as an event whose data is TGI's ErrorResponse
	// {"error":"…","error_type":"…"}.
	"tgi": {name: "tgi", roleEvery: true, perToken: true, usage: usageLastChoice, logprobs: true,
		fingerprint: "3.0.0-native", errorFrame: errorTGI},
	// Ollama, openai/openai.go ToChunk / ToCompleteChunk and middleware/openai.go
	// (ollama/ollama): one chunk per generated piece with "role":"assistant" in every delta
	// and reasoning in "reasoning", a final chunk with empty content and the finish reason,
	// system_fingerprint "fp_ollama", usage omitted from chunks and, with include_usage, sent
	// in a last chunk with empty choices.
	"ollama": {name: "ollama", roleEvery: true, perToken: true, finishSeparate: true, usage: usageFinalChunk,
		fingerprint: "fp_ollama", reasoning: "reasoning"},
	// OpenAI Chat Completions streaming (platform.openai.com/docs/api-reference/chat-streaming):
	// a role chunk {"role":"assistant","content":"","refusal":null} first (its timing is not
	// documented; it is sent as soon as the request is accepted, so this fixture checks that a
	// role-only chunk never counts as the first token), content chunks with
	// an "obfuscation" padding string, a finish chunk with an empty delta, "usage":null on
	// every chunk while include_usage is set and then a chunk with "choices":[] and the usage
	// including completion_tokens_details.reasoning_tokens; system_fingerprint "fp_…".
	// Reasoning is never streamed.
	"openai": {name: "openai", prelude: preludeImmediate, refusal: true, finishSeparate: true,
		usage: usageFinalChunk, usageNull: true, logprobs: true, fingerprint: "fp_llmbench",
		obfuscation: true, hideReasoning: true, reasoningUsage: true, cachedDetails: true},
}

// personalityFor returns the named personality ("" is vllm).
func personalityFor(name string) (*personality, error) {
	if name == "" {
		name = "vllm"
	}
	if p, ok := personalities[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("refengine: Wire %q: want one of %s", name, strings.Join(Wires, ", "))
}

// Usage values for wireEvent.usage besides a count.
const (
	usageOmit = -1
	usageNil  = -2
)

// wireEvent is one chunk to encode.
type wireEvent struct {
	text      []byte
	reasoning bool   // text is reasoning
	role      bool   // a role-only prelude
	finish    string // "" until the last chunk
	usage     int    // completion tokens so far, usageOmit or usageNil
	reasoned  int    // reasoning tokens so far (for usage details)
	timings   *wireTimings
	tools     []byte // delta.tool_calls entries (output.go), instead of text
}

type wireTimings struct {
	cacheN, promptN       int // cacheN: prompt tokens reused from the cache
	predictedN            int
	promptMs, predictedMs float64
	// draftN and draftAccepted are the draft tokens verified and accepted (issue 38), written
	// only when the request decoded speculatively, as llama.cpp does.
	draftN, draftAccepted int
}

// wireEncoder writes a personality's chunks by hand (no reflection).
type wireEncoder struct {
	p            *personality
	chat         bool
	head         []byte // {"id":…,"object":…,"created":…,"model":…[,"system_fingerprint":…],"choices":[
	promptTokens int
	// cached is the prompt tokens found in the prefix cache, for usage details; -1 until the
	// request was scheduled (or where the personality reports none).
	cached int
	pad    uint64
}

func newWireEncoder(p *personality, chat bool, id string, created int64, model string, promptTokens int) *wireEncoder {
	obj := "text_completion"
	if chat {
		obj = "chat.completion.chunk"
	}
	head := appendHead(nil, id, obj, created, model)
	if p.fingerprint != "" {
		head = head[:len(head)-len(`,"choices":[`)]
		head = append(head, `,"system_fingerprint":`...)
		head = appendJSONString(head, p.fingerprint)
		head = append(head, `,"choices":[`...)
	}
	return &wireEncoder{p: p, chat: chat, head: head, promptTokens: promptTokens, cached: -1, pad: hashString(fnvOffset, id)}
}

func (w *wireEncoder) appendUsage(b []byte, completion, reasoned int) []byte {
	switch completion {
	case usageOmit:
		return b
	case usageNil:
		return append(b, `,"usage":null`...)
	}
	b = append(b, `,"usage":`...)
	if !w.p.reasoningUsage {
		return appendUsage(b, w.promptTokens, w.cached, completion)
	}
	b = appendUsage(b, w.promptTokens, w.cached, completion)
	b = b[:len(b)-1]
	b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(reasoned), 10)
	return append(b, "}}"...)
}

// appendEvent appends one SSE event "data: <json>\n\n": the head, the one choice (chat or
// text), the usage, llama.cpp's timings and OpenAI's obfuscation padding, as the
// personality frames them.
func (w *wireEncoder) appendEvent(b []byte, ev *wireEvent) []byte {
	b = append(b, "data: "...)
	b = append(b, w.head...)
	b = append(b, `{"index":0,`...)
	if w.chat {
		b = w.appendChatChoice(b, ev)
	} else {
		b = w.appendTextChoice(b, ev)
	}
	b = append(b, "}]"...)
	b = w.appendUsage(b, ev.usage, ev.reasoned)
	if t := ev.timings; t != nil {
		b = appendTimings(b, t)
	}
	if w.p.obfuscation && !ev.role {
		b = w.appendObfuscation(b)
	}
	return append(b, "}\n\n"...)
}

// appendChatChoice appends a chat chunk's choice after its index: the delta (a role
// prelude, tool calls, reasoning or content), logprobs and the finish reason.
func (w *wireEncoder) appendChatChoice(b []byte, ev *wireEvent) []byte {
	p := w.p
	b = append(b, `"delta":{`...)
	switch {
	case ev.role:
		b = append(b, `"role":"assistant","content":`...)
		if p.roleNull {
			b = append(b, "null"...)
		} else {
			b = append(b, `""`...)
		}
		if p.refusal {
			b = append(b, `,"refusal":null`...)
		}
	case len(ev.tools) > 0:
		// Tool calls are framed as vLLM frames them in every personality.
		if p.roleEvery {
			b = append(b, `"role":"assistant",`...)
		}
		b = append(b, `"tool_calls":[`...)
		b = append(b, ev.tools...)
		b = append(b, ']')
	case len(ev.text) == 0 && p.roleEvery:
		b = append(b, `"role":"assistant","content":""`...)
	case len(ev.text) == 0:
	default:
		if p.roleEvery {
			b = append(b, `"role":"assistant",`...)
		}
		if ev.reasoning && p.reasoning != "" {
			b = append(b, '"')
			b = append(b, p.reasoning...)
			b = append(b, `":`...)
		} else {
			b = append(b, `"content":`...)
		}
		b = appendJSONBytes(b, ev.text)
	}
	b = append(b, '}')
	if p.logprobs {
		b = append(b, `,"logprobs":null`...)
	}
	b = append(b, `,"finish_reason":`...)
	if ev.finish == "" {
		return append(b, "null"...)
	}
	b = appendJSONString(b, ev.finish)
	if p.stopReason {
		b = append(b, `,"stop_reason":null`...)
	}
	return b
}

// appendTextChoice appends a completions chunk's choice after its index: the text, logprobs,
// the finish reason and vLLM's stop_reason.
func (w *wireEncoder) appendTextChoice(b []byte, ev *wireEvent) []byte {
	p := w.p
	b = append(b, `"text":`...)
	b = appendJSONBytes(b, ev.text)
	if p.logprobs {
		b = append(b, `,"logprobs":null`...)
	}
	b = append(b, `,"finish_reason":`...)
	if ev.finish == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, ev.finish)
	}
	if p.stopReason {
		b = append(b, `,"stop_reason":null`...)
	}
	return b
}

// appendTimings appends llama.cpp's timings object.
func appendTimings(b []byte, t *wireTimings) []byte {
	b = append(b, `,"timings":{"cache_n":`...)
	b = strconv.AppendInt(b, int64(t.cacheN), 10)
	b = append(b, `,"prompt_n":`...)
	b = strconv.AppendInt(b, int64(t.promptN), 10)
	b = append(b, `,"prompt_ms":`...)
	b = strconv.AppendFloat(b, t.promptMs, 'f', 3, 64)
	b = append(b, `,"predicted_n":`...)
	b = strconv.AppendInt(b, int64(t.predictedN), 10)
	b = append(b, `,"predicted_ms":`...)
	b = strconv.AppendFloat(b, t.predictedMs, 'f', 3, 64)
	if t.draftN > 0 {
		b = append(b, `,"draft_n":`...)
		b = strconv.AppendInt(b, int64(t.draftN), 10)
		b = append(b, `,"draft_n_accepted":`...)
		b = strconv.AppendInt(b, int64(t.draftAccepted), 10)
	}
	return append(b, '}')
}

// appendObfuscation appends random-looking padding whose length varies with the chunk, as
// OpenAI adds to hide token lengths from side channels; it is not generated text.
func (w *wireEncoder) appendObfuscation(b []byte) []byte {
	w.pad = mix(w.pad)
	n := 1 + int(w.pad%12)
	b = append(b, `,"obfuscation":"`...)
	for i := 0; i < n; i++ {
		b = append(b, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[(w.pad>>(6*i))%62])
	}
	return append(b, '"')
}

// appendStreamError appends the events that end a started stream with an error message.
func (w *wireEncoder) appendStreamError(b []byte, msg string) []byte {
	switch w.p.errorFrame {
	case errorTGI:
		b = append(b, `data: {"error":`...)
		b = appendJSONString(b, msg)
		return append(b, `,"error_type":"generation"}`+"\n\n"...)
	case errorLlamacpp:
		// llama.cpp's server (tools/server/server-context.cpp: format_oai_sse({"error", …}) and
		// "terminate on error"). Builds before it wrote `error: {"code","message","type"}` (an
		// SSE field of its own) and then data: [DONE]; the client reads both.
		b = append(b, `data: {"error":{"code":500,"message":`...)
		b = appendJSONString(b, msg)
		return append(b, `,"type":"server_error"}}`+"\n\n"...)
	}
	b = append(b, "data: "...)
	b = appendErrorJSON(b, &apiError{status: 500, message: msg, typ: "server_error", code: "internal_error"})
	b = append(b, "\n\n"...)
	if w.p.errorFrame == errorThenDone {
		b = append(b, doneEvent...)
	}
	return b
}

// appendUsageEvent appends the final usage chunk (choices empty).
func (w *wireEncoder) appendUsageEvent(b []byte, completion, reasoned int) []byte {
	b = append(b, "data: "...)
	b = append(b, w.head...)
	b = append(b, ']')
	b = w.appendUsage(b, completion, reasoned)
	return append(b, "}\n\n"...)
}

func wireName(w string) string {
	if w == "" {
		return "vllm"
	}
	return w
}
