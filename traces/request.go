// Package traces is the trace data model: the Request type every other package consumes, the
// JSONL trace format (v1, see FORMAT.md) with validation that names file, line and field,
// msgpack encoding, importers for public trace formats, workload statistics, and the bundled
// example traces.
//
// It must not talk to the network, generate synthetic traffic (that is package workloads) or
// know anything about endpoints or metrics.
//
// traces is a supported Go API: Request, the codecs (ReadFile, OpenFile, WriteFile, WriteJSONL,
// the msgpack pair), Source, Stats, the importers and the tools (Scale, Slice, Sample, Filter).
package traces

import (
	"encoding/json"
	"time"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role" msgpack:"role"`
	Content string `json:"content" msgpack:"content"`

	// Images (multimodal requests, see images.go) are sent with the message's text as image
	// parts: OpenAI image_url content parts, Anthropic image blocks.
	Images []Image `json:"images,omitempty" msgpack:"images,omitempty"`
}

// Request is one request of a trace: when it arrives and what it asks for.
type Request struct {
	// ID identifies the request across runs (compare matches on it). When a trace line has
	// no id, the reader assigns "r<line>".
	ID string
	// Arrival is the offset from the trace start at which the request is sent (open loop).
	Arrival time.Duration
	// InputTokens is the prompt length in tokens (of the tokenizer the trace was made for).
	InputTokens int
	// OutputTokens is the number of tokens to generate (sent as max_tokens, with ignore_eos
	// and min_tokens where the backend accepts them).
	OutputTokens int
	// Prompt is the completion prompt text; empty means "synthesize InputTokens tokens".
	Prompt string
	// Messages is the chat conversation; when set the request goes to /v1/chat/completions.
	Messages []Message
	// HashIDs are shared-prefix block ids (Mooncake style): requests whose HashIDs share a
	// leading run share that prefix of prompt text.
	HashIDs []int64
	// Session groups the turns of a multi-turn conversation; Turn orders them (from 1).
	Session string
	Turn    int
	// Think is the user's think time before this turn is sent, after the previous turn's
	// response completed (multi-turn sessions only).
	Think time.Duration
	// Class is a scenario tag (chat, rag, code, reasoning, ...); results are broken down by it.
	Class string
	// Temperature and Seed override sampling when set.
	Temperature *float64
	Seed        *int64

	// Quality (issue 17). Tools, ToolChoice and ResponseFormat are sent as is in the chat
	// request body (OpenAI format, compact JSON); Expect lists the checks package quality
	// grades the response by. All are validated on read (traces/FORMAT.md).
	Tools          json.RawMessage
	ToolChoice     json.RawMessage
	ResponseFormat json.RawMessage
	Expect         []Expectation

	// Line is the 1-based line of the trace file this request came from (0 if generated).
	Line int

	// Agentic sessions (FORMAT.md "Agentic sessions").
	//
	// After lists the turns of the same Session this turn depends on: it is sent once all of
	// them have completed, plus Think and ToolDelay. nil means the previous turn in Turn order
	// (a plain multi-turn session); an empty, non-nil list means none: the turn starts a branch
	// of its own at its Arrival. Several entries join sub-agents; several turns after one fan
	// out to them.
	After []int
	// ToolDelay is the time the agent spends running a tool after its dependencies completed
	// and before this call, distinct from the user's Think.
	ToolDelay time.Duration
	// Affinity is the session-affinity key sent in the session header so that a router can
	// pin the session to one replica; empty means the Session itself.
	Affinity string
	// Cancellations (issue 38). CancelAfter is how long after sending the request the client
	// closes the stream (trace field cancel_after_ms); the request is then recorded as
	// metrics.KindCancelled with what it received so far. 0: never cancelled.
	CancelAfter time.Duration

	// afterRefs are the "after" entries as read, turn numbers or ids, until finish resolves
	// them into After.
	afterRefs []afterRef

	// Per-request model (issue 38, FORMAT.md "Per-request model").
	//
	// Model is the model or adapter name sent in the request body; empty means the run's
	// --model. A LoRA adapter served on a base model is named here as the server lists it in
	// /v1/models.
	Model string
}
