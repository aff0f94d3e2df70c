package loadgen

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/metrics"
)

// errDetail is what a server's error body says beyond its message: its type and code, and the
// numbers of a context-length error. Only error bodies reach it (never the hot path), so it
// decodes with encoding/json.
type errDetail struct {
	message, typ, code string
	// promptTokens and contextTokens are the prompt length and context size the error gave
	// (0: not given).
	promptTokens, contextTokens int
}

// parseErrorBody reads the error object of b in any of the shapes servers send: OpenAI's
// {"error":{"message","type","param","code"}} (vLLM's newer builds, llama.cpp's with
// "n_prompt_tokens" and "n_ctx", Anthropic's {"type":"error","error":{...}}), vLLM's and
// SGLang's top-level {"object":"error","message","type","code"}, and TGI's
// {"error":"…","error_type":"…"}. ok is false when b is not a JSON object.
func parseErrorBody(b []byte) (d errDetail, ok bool) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil || top == nil {
		return d, false
	}
	obj := top
	if raw, has := top["error"]; has {
		var inner map[string]json.RawMessage
		if json.Unmarshal(raw, &inner) == nil && inner != nil {
			obj = inner
		} else {
			d.message = jsonString(raw)
			d.typ = jsonString(top["error_type"])
		}
	}
	if d.message == "" {
		d.message = jsonString(obj["message"])
	}
	if t := jsonString(obj["type"]); t != "" && (d.typ == "" || t != "error") {
		d.typ = t
	}
	d.code = jsonScalar(obj["code"])
	d.promptTokens = jsonCount(obj["n_prompt_tokens"])
	d.contextTokens = jsonCount(obj["n_ctx"])
	return d, true
}

// jsonString is raw's string value, "" when it is not a string.
func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// jsonScalar is raw's string value, or a number as written; "" for anything else.
func jsonScalar(raw json.RawMessage) string {
	if s := jsonString(raw); s != "" {
		return s
	}
	var n json.Number
	if len(raw) > 0 && raw[0] != '"' && json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// jsonCount is raw as a token count in [1, traces-sized bounds], 0 otherwise.
func jsonCount(raw json.RawMessage) int {
	var n json.Number
	if len(raw) == 0 || json.Unmarshal(raw, &n) != nil {
		return 0
	}
	v, err := n.Int64()
	if err != nil || v < 1 || v > maxErrorCount {
		return 0
	}
	return int(v)
}

// maxErrorCount bounds the token counts read from an error (a hostile figure stays an int32).
const maxErrorCount = 1<<31 - 1

// Context-length errors in the words each server uses: vLLM and OpenAI ("This model's
// maximum context length is 4096 tokens. However, you requested 5000 tokens (4990 in the
// messages, 10 in the completion)", "... your request has 5000 input tokens"), SGLang ("The
// input (5000 tokens) is longer than the model's context length (4096 tokens)"), llama.cpp
// ("request (5000 tokens) exceeds the available context size (4096 tokens)") and the
// reference engine ("... but the prompt has 5000 tokens").
var (
	ctxTypes   = []string{"exceed_context_size_error", "context_length_exceeded"}
	ctxPhrases = []string{"maximum context length", "model's context length", "exceeds the available context size", "context_length_exceeded", "context window"}
	reCtxSize  = regexp.MustCompile(`(?i)context (?:length|size|window)(?: is)? \(?(\d{1,10}) tokens`)
	rePrompt   = regexp.MustCompile(`(?i)(?:\((\d{1,10}) in the (?:messages|prompt)|prompt has (\d{1,10}) tokens|has (\d{1,10}) input tokens|resulted in (\d{1,10}) tokens|(?:input|request) \((\d{1,10}) tokens\))`)
)

// contextLength reports whether d is a context-length error, and fills its numbers from the
// message when the body gave none.
func (d *errDetail) contextLength() bool {
	hit := false
	for _, t := range ctxTypes {
		if d.typ == t || d.code == t {
			hit = true
		}
	}
	low := strings.ToLower(d.message)
	for _, p := range ctxPhrases {
		if strings.Contains(low, p) {
			hit = true
		}
	}
	if !hit {
		return false
	}
	if m := reCtxSize.FindStringSubmatch(d.message); m != nil && d.contextTokens == 0 {
		d.contextTokens = atoiBounded(m[1])
	}
	if m := rePrompt.FindStringSubmatch(d.message); m != nil && d.promptTokens == 0 {
		for _, g := range m[1:] {
			if g != "" {
				d.promptTokens = atoiBounded(g)
				break
			}
		}
	}
	return true
}

func atoiBounded(s string) int {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 || v > maxErrorCount {
		return 0
	}
	return int(v)
}

// noteServerError records what the error body b says beyond its message on rec (bounded,
// escaped and scrubbed like Record.Error) and turns a context-length error into
// metrics.FailContextLength, whatever kind the status or framing gave it.
func (c *client) noteServerError(rec *metrics.Record, b []byte) {
	d, ok := parseErrorBody(b)
	if !ok {
		d = errDetail{message: string(b)}
	}
	rec.ErrorType = c.scrubField(d.typ)
	rec.ErrorCode = c.scrubField(d.code)
	if d.contextLength() {
		rec.Failure = metrics.FailContextLength
		rec.ErrorPromptTokens, rec.ErrorContextTokens = d.promptTokens, d.contextTokens
	}
	if rec.Status == 404 && d.modelNotFound() {
		rec.Failure = metrics.FailModelNotFound
	}
}

// modelNotFound reports whether a 404's error says the model named does not exist: vLLM's
// and SGLang's NotFoundError "The model `x` does not exist.", OpenAI's code model_not_found,
// or a message naming a model that does not exist or was not found.
func (d errDetail) modelNotFound() bool {
	if d.code == "model_not_found" || d.typ == "model_not_found" {
		return true
	}
	msg := strings.ToLower(d.message)
	return strings.Contains(msg, "model") && (strings.Contains(msg, "does not exist") || strings.Contains(msg, "not found"))
}

// scrubField is scrub for the short fields (type, code).
func (c *client) scrubField(s string) string {
	if s == "" {
		return ""
	}
	return safetext.Clip(safetext.Escape(c.redact.String(s), 4*metrics.MaxErrorField), metrics.MaxErrorField-len("…"))
}
