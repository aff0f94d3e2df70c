package loadgen

import (
	"bytes"
	"encoding/json"

	"github.com/llmbench/llmbench/metrics"
)

// Output capture for grading (issue 17). A request whose trace line carries expect (or every
// request with Options.KeepOutput) keeps its answer text and its tool calls in the Record
// (OutputText, ToolCalls). The hand-written chunk decoder of the hot path flattens all
// generated text into one buffer; capture decodes the same objects a second time with
// encoding/json, only for these requests, to keep content apart from reasoning and to
// assemble the tool calls from their streamed fragments.

// maxToolCalls bounds the tool calls kept for one response, maxToolName a call's name.
const (
	maxToolCalls = 64
	maxToolName  = 1024
)

// capture accumulates one response's answer text and tool calls.
type capture struct {
	text  []byte
	calls []metrics.ToolCall
	// slot maps a streamed tool call's index to its entry in calls.
	slot map[int]int
}

// capChoice is the part of a choice capture reads: completions' text, or the delta (streamed
// chat) or message (whole chat) with its content and tool calls.
type capChoice struct {
	Text    *string  `json:"text"`
	Delta   *capTurn `json:"delta"`
	Message *capTurn `json:"message"`
}

type capTurn struct {
	Content   *string       `json:"content"`
	ToolCalls []capToolCall `json:"tool_calls"`
}

// capToolCall is one element of tool_calls: whole in a non-streaming message, a fragment in a
// stream (vLLM and OpenAI send index, id and function.name in the first fragment of a call
// and further pieces of function.arguments in the following ones, each with the same index).
type capToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// add takes one chunk (or a whole response body) that parseChunk accepted.
func (c *capture) add(data []byte) {
	var obj struct {
		Choices []capChoice `json:"choices"`
	}
	if json.Unmarshal(data, &obj) != nil || len(obj.Choices) == 0 {
		return
	}
	ch := &obj.Choices[0]
	if ch.Text != nil {
		c.addText(*ch.Text)
	}
	turn := ch.Delta
	if turn == nil {
		turn = ch.Message
	}
	if turn == nil {
		return
	}
	if turn.Content != nil {
		c.addText(*turn.Content)
	}
	for i := range turn.ToolCalls {
		c.addCall(&turn.ToolCalls[i], i)
	}
}

func (c *capture) addText(s string) {
	if room := metrics.MaxOutputText - len(c.text); room > 0 {
		c.text = append(c.text, s[:min(len(s), room)]...)
	}
}

// addCall merges one tool-call element; pos is its position in the array (the index when
// the server sends none).
func (c *capture) addCall(tc *capToolCall, pos int) {
	idx := pos
	if tc.Index != nil {
		idx = *tc.Index
	}
	if c.slot == nil {
		c.slot = map[int]int{}
	}
	at, ok := c.slot[idx]
	if !ok {
		if len(c.calls) >= maxToolCalls {
			return
		}
		at = len(c.calls)
		c.slot[idx] = at
		c.calls = append(c.calls, metrics.ToolCall{})
	}
	call := &c.calls[at]
	if call.ID == "" {
		call.ID = tc.ID
	}
	if len(call.Name)+len(tc.Function.Name) <= maxToolName {
		call.Name += tc.Function.Name
	}
	args := tc.Function.Arguments
	var frag string
	switch {
	case len(args) == 0 || bytes.Equal(args, []byte("null")):
	case args[0] == '"':
		if json.Unmarshal(args, &frag) != nil {
			return
		}
	default:
		// Some servers send the arguments of a whole message as an object, not a string.
		frag = string(args)
	}
	if room := metrics.MaxOutputText - len(call.Arguments); room > 0 {
		call.Arguments += frag[:min(len(frag), room)]
	}
}

// store writes what was captured into rec (nothing when c is nil).
func (c *capture) store(rec *metrics.Record) {
	if c == nil {
		return
	}
	rec.OutputText = metrics.TruncateOutput(string(c.text))
	if len(c.calls) > 0 {
		rec.ToolCalls = c.calls
	}
}
