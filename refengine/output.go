package refengine

import (
	"strconv"
)

// Output is a request's output as the engine sends it: what a client assembles from the
// stream or reads from a non-streamed response.
type Output struct {
	// Content is the message content (a completion's text).
	Content string
	// Reasoning is the reasoning text (Config.ReasoningFraction), sent before the content.
	Reasoning string
	// ToolCalls are the tool calls, in order.
	ToolCalls []ToolCall
	// FinishReason is "length", "stop" or "tool_calls".
	FinishReason string
}

// ToolCall is one assembled tool call.
type ToolCall struct {
	ID, Name, Arguments string
}

// outPlan says what each output token of a request reads as: reasoning words for the first
// reasoning tokens, then the answer's tokens (if the request has an answer), then words.
// Word i is tokenizer.Word(Mix(base ^ Mix(i))) wherever it falls.
type outPlan struct {
	base      uint64
	reasoning int
	ans       *answer
}

// answerRange is the answer's token range [a, b); empty without an answer.
func (p *outPlan) answerRange() (int, int) {
	if p.ans == nil {
		return 0, 0
	}
	return p.reasoning, p.reasoning + len(p.ans.toks)
}

// appendText appends output tokens [start, start+n) as text (tool-call tokens as their name
// and argument text).
func (p *outPlan) appendText(b []byte, start, n int) []byte {
	if p.ans == nil {
		return appendOutput(b, p.base, start, n)
	}
	a, z := p.answerRange()
	end := start + n
	if start < a {
		s := min(end, a)
		b = appendOutput(b, p.base, start, s-start)
		start = s
	}
	if start < end && start < z {
		s := min(end, z)
		b = appendTokens(b, p.ans.toks, start-a, s-a)
		start = s
	}
	if start < end {
		b = appendOutput(b, p.base, start, end-start)
	}
	return b
}

// target is the output length: an answer ends where it ends unless ignore_eos or min_tokens
// keep a text answer going (a structured one cannot be extended), within max_tokens and the
// early-eos fault's length (limit).
func (p *outPlan) target(maxTokens, minTokens int, ignoreEOS bool, limit int) int {
	if p.ans == nil {
		return limit
	}
	_, z := p.answerRange()
	t := z
	if !p.ans.structured {
		if ignoreEOS {
			t = maxTokens
		} else {
			t = max(z, minTokens)
		}
	}
	return max(1, min(t, maxTokens, limit))
}

// finish is the finish reason after n tokens when the scheduler says reason: "tool_calls"
// once a tool call's name has been generated (vLLM's rule), "stop" when the answer ended
// there, else reason.
func (p *outPlan) finish(n int, reason string) string {
	if p.ans == nil {
		return reason
	}
	a, z := p.answerRange()
	if p.ans.kind == ansTool && len(p.ans.calls) > 0 && n > a+p.ans.calls[0].start {
		return "tool_calls"
	}
	if n == z {
		return "stop"
	}
	return reason
}

// appendToolDeltas appends the delta.tool_calls entries for answer tokens [a, b) (answer
// coordinates) in vLLM's framing: a call's first entry, sent once its name is complete,
// carries id, type, index and function.name (and any arguments in the same range); later ones
// carry index and function.arguments. A name cut off at the end of the output (flush) is
// sent as it stands.
func (p *outPlan) appendToolDeltas(b []byte, a, z int, flush bool) []byte {
	first := true
	for i, c := range p.ans.calls {
		if z <= c.start || a >= c.end {
			continue
		}
		nameDone := z >= c.nameEnd
		if !nameDone && !flush {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		argsFrom, argsTo := max(a, c.nameEnd), min(z, c.end)
		if a < c.nameEnd {
			b = append(b, `{"id":`...)
			b = appendJSONString(b, c.id)
			b = append(b, `,"type":"function","index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"function":{"name":`...)
			b = appendJSONString(b, string(appendTokens(nil, p.ans.toks, c.start, min(z, c.nameEnd))))
			if argsTo > argsFrom {
				b = append(b, `,"arguments":`...)
				b = appendJSONString(b, string(appendTokens(nil, p.ans.toks, argsFrom, argsTo)))
			}
			b = append(b, "}}"...)
			continue
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"function":{"arguments":`...)
		b = appendJSONString(b, string(appendTokens(nil, p.ans.toks, argsFrom, argsTo)))
		b = append(b, "}}"...)
	}
	return b
}

// output assembles the first n output tokens as a client sees them; reasoning is false where
// the server streams reasoning as content.
func (p *outPlan) output(n int, reason string, reasoning bool) Output {
	var o Output
	r := min(n, p.reasoning)
	start := 0
	if reasoning {
		o.Reasoning = string(appendOutput(nil, p.base, 0, r))
		start = r
	}
	a, z := p.answerRange()
	if p.ans == nil || p.ans.kind != ansTool {
		o.Content = string(p.appendText(nil, start, n-start))
	} else {
		content := p.appendText(nil, start, min(n, a)-start)
		for _, c := range p.ans.calls {
			if n <= a+c.start {
				break
			}
			end := min(n-a, c.end)
			o.ToolCalls = append(o.ToolCalls, ToolCall{ID: c.id,
				Name:      string(appendTokens(nil, p.ans.toks, c.start, min(end, c.nameEnd))),
				Arguments: string(appendTokens(nil, p.ans.toks, min(end, c.nameEnd), end))})
		}
		if n > z {
			content = p.appendText(content, z, n-z)
		}
		o.Content = string(content)
	}
	o.FinishReason = p.finish(n, reason)
	return o
}
