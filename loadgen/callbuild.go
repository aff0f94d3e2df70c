package loadgen

import (
	"fmt"
	"strconv"

	"github.com/llmbench/llmbench/traces"
)

// buildCall makes the wire request of turn i: its prompt (given or synthesized), carrying the
// conversation so far (conv may be nil for a first turn), and its encoded body.
func (r *runner) buildCall(it *item, i int, conv *conversation) *call {
	if conv == nil {
		conv = &conversation{}
	}
	q := it.turns[i]
	k := r.newCall(it, i, q)
	if r.setAPI(k, q) {
		return k
	}
	if q.InputTokens > traces.MaxTokens || q.OutputTokens > traces.MaxTokens {
		// A Request built in code skipped trace validation: refuse it rather than build a
		// prompt of unbounded size.
		k.bodyErr = fmt.Errorf("input_tokens %d / output_tokens %d: past the cap of %d tokens (traces.MaxTokens)", q.InputTokens, q.OutputTokens, traces.MaxTokens)
		return k
	}
	text, synthesized, conv := r.turnText(k, q, conv)
	if !k.chat && q.ImageCount() > 0 {
		k.bodyErr = fmt.Errorf("request %s carries images: replay it with --api chat, responses or messages", q.ID)
		return k
	}
	if q.HoldsHistory() {
		// The turn's messages are the whole conversation (traces.Request.HoldsHistory).
		conv = &conversation{}
	}
	synthesized = assembleInput(k, q, conv, text, synthesized)
	r.countInput(k, q, i, conv, synthesized)
	k.body, k.bodyErr = r.c.body(k)
	return k
}

// newCall is turn i's call with the fields taken from the request as they are: its id (with
// the repeat), sampling, tools, affinity, and whether the text is kept for a later turn.
func (r *runner) newCall(it *item, i int, q *traces.Request) *call {
	k := &call{
		requestID:   q.ID,
		maxTokens:   q.OutputTokens,
		temperature: q.Temperature,
		seed:        q.Seed,
		keepText:    i+1 < len(it.turns),
		capture:     len(q.Expect) > 0 || r.opts.KeepOutput,
		natural:     q.NaturalEnd(),
		model:       q.Model,
	}
	if len(q.Messages) > 0 || r.opts.Target.API == "chat" {
		k.tools, k.toolChoice, k.responseFormat = q.Tools, q.ToolChoice, q.ResponseFormat
	}
	if r.opts.Repeat > 1 {
		k.requestID = q.ID + ".r" + strconv.Itoa(it.repeat)
	}
	k.affinity = r.affinity(it, q)
	k.cancelAfter, k.cancelShown = scaleCancel(q.CancelAfter, r.opts.CancelScale), q.CancelAfter // cancel.go
	if it.graph {
		k.keepText = true // a dependent may be any later turn
	}
	return k
}

// setAPI sets k's wire shape from the target's API. An embeddings call is complete after it
// (its input and body are built here) and setAPI reports true; any other call goes on to its
// prompt.
func (r *runner) setAPI(k *call, q *traces.Request) (done bool) {
	switch api := r.opts.Target.API; api {
	case "chat":
		k.chat = true
	case "completions":
	case "responses", "messages":
		k.chat, k.api = true, api
	case "embeddings":
		r.embeddingCall(k, q)
		if k.bodyErr == nil {
			k.body, k.bodyErr = r.c.body(k)
		}
		return true
	default:
		k.chat = len(q.Messages) > 0
	}
	return false
}

// turnText is the turn's own text: the trace's prompt, or one synthesized for a turn with token
// counts only, whose input_tokens are its whole prompt, the carried conversation included
// (workloads.Prompter.TurnText). When the synthesized text cannot carry the conversation, the
// returned conversation is empty.
func (r *runner) turnText(k *call, q *traces.Request, conv *conversation) (text string, synthesized bool, _ *conversation) {
	text = q.Prompt
	if text != "" || (len(q.Messages) > 0 && !textless(q.Messages)) {
		return text, false, conv
	}
	var carry bool
	text, carry = r.prompter.TurnText(r.sized(q, conv.tokens), conv.tokens)
	if !carry {
		conv = &conversation{}
	}
	if text != "" && q.ImageCount() == 0 {
		// (A request's images add their own tokens, which the text is not sized for.)
		k.intendedInput = q.InputTokens
	}
	return text, true, conv
}

// assembleInput sets k's input: the conversation so far and the turn, as chat messages or as
// one completion prompt. A completion built from the trace's messages is not synthesized;
// assembleInput returns whether the input still is.
func assembleInput(k *call, q *traces.Request, conv *conversation, text string, synthesized bool) bool {
	if k.chat {
		msgs := make([]traces.Message, 0, len(conv.messages)+len(q.Messages)+1)
		msgs = append(msgs, conv.messages...)
		switch {
		case len(q.Messages) > 0 && synthesized:
			msgs = append(msgs, withText(q.Messages, text)...)
		case len(q.Messages) > 0:
			msgs = append(msgs, q.Messages...)
		default:
			msgs = append(msgs, traces.Message{Role: "user", Content: text})
		}
		k.messages = msgs
		return synthesized
	}
	if len(q.Messages) > 0 && text == "" {
		text = joinMessages(q.Messages)
		synthesized = false
	}
	k.prompt = conv.text + text
	return synthesized
}

// countInput sets k's input token count where it is known before the reply: counted with the
// tokenizer (a given prompt, or a later turn), else the carried conversation's tokens plus the
// turn's input_tokens for a later turn given as text.
func (r *runner) countInput(k *call, q *traces.Request, i int, conv *conversation, synthesized bool) {
	switch {
	case r.opts.Tokenizer != nil && (!synthesized || i > 0):
		n := 0
		if k.chat {
			for _, m := range k.messages {
				n += r.opts.Tokenizer.Count(m.Content)
			}
		} else {
			n = r.opts.Tokenizer.Count(k.prompt)
		}
		k.inputTokens, k.inputCounted = n, true
	case i > 0 && !synthesized:
		k.inputTokens = conv.tokens + q.InputTokens
	}
}
