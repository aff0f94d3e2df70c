package refengine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/refengine/perf"
	"github.com/llmbench/llmbench/tokenizer"
)

// apiError is an OpenAI-style error: {"error":{"message","type","param","code"}}.
type apiError struct {
	status  int
	message string
	typ     string
	param   string
	code    string
	numCode int // written as a number in place of code when set (vLLM's NotFoundError: 404)
}

func (e *apiError) Error() string { return e.message }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, message: safetext.Clip(fmt.Sprintf(format, args...), maxErrorText),
		typ: "invalid_request_error", param: safetext.Clip(param, 100), code: "invalid_value"}
}

// maxErrorText bounds an error message, which may quote the client's input.
const maxErrorText = 1024

// appendErrorJSON appends the OpenAI error body of e.
func appendErrorJSON(b []byte, e *apiError) []byte {
	b = append(b, `{"error":{"message":`...)
	b = appendJSONString(b, e.message)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, e.typ)
	b = append(b, `,"param":`...)
	if e.param == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, e.param)
	}
	b = append(b, `,"code":`...)
	if e.numCode != 0 {
		b = fmt.Appendf(b, "%d", e.numCode)
	} else if e.code == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, e.code)
	}
	return append(b, "}}"...)
}

func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	w.Write(append(appendErrorJSON(nil, e), '\n'))
}

// wireRequest is the JSON body of /v1/completions and /v1/chat/completions. Fields the engine
// does not model (top_p, stop, user, ...) are accepted and ignored.
type wireRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []wireMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           *int            `json:"min_tokens"`
	IgnoreEOS           *bool           `json:"ignore_eos"`
	Temperature         *float64        `json:"temperature"`
	Seed                *int64          `json:"seed"`
	Stream              *bool           `json:"stream"`
	StreamOptions       *wireStreamOpts `json:"stream_options"`
	N                   *int            `json:"n"`
	HashIDs             []int64         `json:"hash_ids"`
	// Tools, tool choice and structured output (answer.go, wire_tools.go).
	Tools          json.RawMessage `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	ResponseFormat json.RawMessage `json:"response_format"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type wireStreamOpts struct {
	IncludeUsage         *bool `json:"include_usage"`
	ContinuousUsageStats *bool `json:"continuous_usage_stats"`
}

// wirePart is one content part: OpenAI chat "text" and "image_url" ({"url"}), Responses
// "input_text" and "input_image" (image_url a string), Anthropic "text" and "image" (source).
type wirePart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
	Source   *wireImageSrc   `json:"source"`
}

type wireImageSrc struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// request is a decoded, validated generation request.
type request struct {
	chat            bool
	model           string
	promptTokens    int
	promptIDs       []int // token ids of the prompt (chat: of the concatenated contents)
	promptHash      uint64
	hashIDs         []int64
	maxTokens       int
	minTokens       int
	ignoreEOS       bool
	temperature     float64
	seed            *int64
	stream          bool
	includeUsage    bool
	continuousUsage bool

	// Images (images.go): how many the prompt holds and their tokens, which are part of
	// promptTokens; the vision encoder runs over imageTokens when the prefill starts.
	images      int
	imageTokens int

	// What an answer is read from (answer.go): the chat contents (or the prompt text), the
	// tools, tool_choice and response_format; question is set when a content asks one.
	contents   []string
	question   bool
	tools      *jval
	toolChoice *jval
	format     *jval

	lora int // the LoRA adapter named by model (lora.go); 0 for the base model
}

// decodeLimits are the bounds a request is checked against.
type decodeLimits struct {
	servedModel      string
	maxModelLen      int
	defaultMaxTokens int // chat requests without max_tokens
	vision           perf.Vision
	lora             *loraModel // the adapters served beside servedModel (nil: none)
}

// resolveModel maps a request's model name to its adapter (0: the base model; "" means the
// base), or vLLM's 404 for a name the engine does not serve.
func (lim decodeLimits) resolveModel(name string) (int, *apiError) {
	id, ok := lim.lora.lookup(name, lim.servedModel)
	if !ok {
		return 0, loraNotFound(name)
	}
	return id, nil
}

// decodeRequest parses and validates a request body. It never panics on any input.
// It parses the one JSON object, checks the model, reads the prompt or messages, then the
// output length, the sampling parameters and the stream options.
func decodeRequest(body []byte, chat bool, lim decodeLimits) (*request, *apiError) {
	var wr wireRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&wr); err != nil {
		return nil, jsonError(err)
	}
	if dec.More() {
		return nil, badRequest("", "request body has data after the JSON object; send exactly one object")
	}
	r := &request{chat: chat, model: wr.Model}
	if r.model == "" {
		r.model = lim.servedModel
	}
	var aerr *apiError
	if r.lora, aerr = lim.resolveModel(r.model); aerr != nil {
		return nil, aerr
	}
	for _, step := range []func(*request, *wireRequest, decodeLimits) *apiError{
		(*request).decodeInput, (*request).checkPromptLen, (*request).decodeMaxTokens,
		(*request).decodeSampling, (*request).decodeStreaming,
	} {
		if err := step(r, &wr, lim); err != nil {
			return nil, err
		}
	}
	r.hashIDs = wr.HashIDs
	if err := r.decodeStructured(&wr); err != nil {
		return nil, err
	}
	return r, nil
}

// decodeInput reads a chat request's messages or a completions request's prompt.
func (r *request) decodeInput(wr *wireRequest, lim decodeLimits) *apiError {
	if !r.chat {
		if wr.Messages != nil {
			return badRequest("messages", "completions take `prompt`, not `messages`; use /v1/chat/completions for chat")
		}
		return r.decodePrompt(wr.Prompt)
	}
	if wr.Prompt != nil {
		return badRequest("prompt", "chat completions take `messages`, not `prompt`")
	}
	if len(wr.Messages) == 0 {
		return badRequest("messages", "`messages` must be a non-empty array of {role, content}")
	}
	r.promptHash = fnvOffset
	for i, m := range wr.Messages {
		if m.Role == "" {
			return badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role is required", i)
		}
		if err := r.addMessage(m.Role, m.Content, fmt.Sprintf("messages[%d].content", i), lim.vision); err != nil {
			return err
		}
	}
	return nil
}

// checkPromptLen rejects an empty prompt and one that fills the model's context.
func (r *request) checkPromptLen(_ *wireRequest, lim decodeLimits) *apiError {
	p := "prompt"
	if r.chat {
		p = "messages"
	}
	if r.promptTokens == 0 {
		return badRequest(p, "the prompt is empty; send at least one token")
	}
	if r.promptTokens >= lim.maxModelLen {
		return badRequest(p, "This model's maximum context length is %d tokens, but the prompt has %d tokens; shorten the prompt.", lim.maxModelLen, r.promptTokens)
	}
	return nil
}

// decodeMaxTokens reads max_tokens (or max_completion_tokens, which wins) and min_tokens;
// without a maximum, chat generates up to the default and completions 16 tokens, within the
// context left after the prompt.
func (r *request) decodeMaxTokens(wr *wireRequest, lim decodeLimits) *apiError {
	maxTok := wr.MaxTokens
	maxParam := "max_tokens"
	if wr.MaxCompletionTokens != nil {
		maxTok, maxParam = wr.MaxCompletionTokens, "max_completion_tokens"
	}
	switch {
	case maxTok != nil:
		if *maxTok < 1 {
			return badRequest(maxParam, "%s must be at least 1, got %d", maxParam, *maxTok)
		}
		r.maxTokens = *maxTok
		// promptTokens < maxModelLen here, so the subtraction cannot wrap (the sum could).
		if r.maxTokens > lim.maxModelLen-r.promptTokens {
			return badRequest(maxParam, "This model's maximum context length is %d tokens. However, you requested %d tokens in the completion (%d in the prompt). Reduce the prompt or %s.", lim.maxModelLen, r.maxTokens, r.promptTokens, maxParam)
		}
	case r.chat:
		r.maxTokens = min(lim.defaultMaxTokens, lim.maxModelLen-r.promptTokens)
	default:
		r.maxTokens = min(16, lim.maxModelLen-r.promptTokens)
	}
	if wr.MinTokens != nil {
		if *wr.MinTokens < 0 || *wr.MinTokens > r.maxTokens {
			return badRequest("min_tokens", "min_tokens must be between 0 and max_tokens (%d), got %d", r.maxTokens, *wr.MinTokens)
		}
		r.minTokens = *wr.MinTokens
	}
	return nil
}

// decodeSampling reads ignore_eos, temperature (1 when absent), seed and n (only 1).
func (r *request) decodeSampling(wr *wireRequest, _ decodeLimits) *apiError {
	if wr.IgnoreEOS != nil {
		r.ignoreEOS = *wr.IgnoreEOS
	}
	r.temperature = 1
	if wr.Temperature != nil {
		if *wr.Temperature < 0 || *wr.Temperature > 2 {
			return badRequest("temperature", "temperature must be between 0 and 2, got %g", *wr.Temperature)
		}
		r.temperature = *wr.Temperature
	}
	r.seed = wr.Seed
	if wr.N != nil && *wr.N != 1 {
		return badRequest("n", "only n=1 is supported, got %d", *wr.N)
	}
	return nil
}

// decodeStreaming reads stream and stream_options, which need stream true.
func (r *request) decodeStreaming(wr *wireRequest, _ decodeLimits) *apiError {
	if wr.Stream != nil {
		r.stream = *wr.Stream
	}
	if wr.StreamOptions == nil {
		return nil
	}
	if !r.stream {
		return badRequest("stream_options", "stream_options can only be given when stream is true")
	}
	if o := wr.StreamOptions.IncludeUsage; o != nil {
		r.includeUsage = *o
	}
	if o := wr.StreamOptions.ContinuousUsageStats; o != nil {
		r.continuousUsage = *o
	}
	return nil
}

// decodePrompt accepts a string, an array of one string, or an array of token ids.
func (r *request) decodePrompt(raw json.RawMessage) *apiError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return badRequest("prompt", "`prompt` is required")
	}
	var tok tokenizer.Reference
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return badRequest("prompt", "`prompt` is not a valid JSON string: %v", err)
		}
		r.setTextPrompt(tok, s)
		return nil
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return badRequest("prompt", "`prompt` must be a string, an array of one string or an array of token ids: %v", err)
		}
		if len(items) == 0 {
			return badRequest("prompt", "`prompt` is an empty array; send a string")
		}
		if first := bytes.TrimSpace(items[0]); len(first) > 0 && first[0] == '"' {
			if len(items) != 1 {
				return badRequest("prompt", "batched prompts (%d strings) are not supported; send one prompt per request", len(items))
			}
			var s string
			if err := json.Unmarshal(first, &s); err != nil {
				return badRequest("prompt", "prompt[0] is not a valid JSON string: %v", err)
			}
			r.setTextPrompt(tok, s)
			return nil
		}
		h := uint64(fnvOffset)
		r.promptIDs = make([]int, len(items))
		for i, it := range items {
			var id int
			if err := json.Unmarshal(it, &id); err != nil || id < 0 {
				return badRequest(fmt.Sprintf("prompt[%d]", i), "prompt[%d] must be a non-negative integer token id", i)
			}
			r.promptIDs[i] = id
			h = hashUint(h, uint64(id))
		}
		r.promptTokens = len(items)
		r.promptHash = h
		return nil
	default:
		return badRequest("prompt", "`prompt` must be a string, an array of one string or an array of token ids")
	}
}

func (r *request) setTextPrompt(tok tokenizer.Reference, s string) {
	r.promptIDs = tok.Encode(s)
	r.promptTokens = len(r.promptIDs)
	r.promptHash = hashString(fnvOffset, s)
	r.contents = []string{s}
	r.question = asksQuestion(s)
}

// messageContent returns a message's text and images: a string, or an array of content
// parts (text parts concatenated; image parts decoded, images.go). param names the content in
// errors.
func messageContent(raw json.RawMessage, param string) (string, []imageInfo, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", nil, badRequest(param, "%s is not a valid JSON string: %v", param, err)
		}
		return s, nil, nil
	case '[':
		var parts []wirePart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", nil, badRequest(param, "%s must be a string or an array of content parts: %v", param, err)
		}
		var sb strings.Builder
		var imgs []imageInfo
		for j, p := range parts {
			at := fmt.Sprintf("%s[%d]", param, j)
			switch p.Type {
			case "text", "input_text":
				sb.WriteString(p.Text)
			case "image_url", "input_image", "image":
				if len(imgs) == maxImages {
					return "", nil, badRequest(at, "more than %d images in one message", maxImages)
				}
				im, err := decodeImagePart(&p, at)
				if err != nil {
					return "", nil, err
				}
				imgs = append(imgs, im)
			default:
				return "", nil, badRequest(at+".type", "content part type %q is not supported; send text or image parts", safetext.Clip(p.Type, 40))
			}
		}
		return sb.String(), imgs, nil
	default:
		return "", nil, badRequest(param, "%s must be a string or an array of content parts", param)
	}
}

// addMessage adds one message's tokens (text and images) to the prompt, its ids and its hash.
func (r *request) addMessage(role string, content json.RawMessage, param string, v perf.Vision) *apiError {
	var tok tokenizer.Reference
	text, imgs, err := messageContent(content, param)
	if err != nil {
		return err
	}
	r.promptTokens += tok.Count(text)
	r.promptIDs = append(r.promptIDs, tok.Encode(text)...)
	r.contents = append(r.contents, text)
	r.question = r.question || asksQuestion(text)
	h := r.promptHash
	h = hashString(h, role)
	h = hashUint(h, 0)
	h = hashString(h, text)
	h = hashUint(h, 1)
	for _, im := range imgs {
		n := v.ImageTokens(im.width, im.height)
		r.images++
		r.imageTokens += n
		r.promptTokens += n
		// The image's tokens are placeholders derived from its bytes: the same image is the
		// same prefix, as engines hash multimodal inputs for their prefix caches.
		for k := 0; k < n; k++ {
			r.promptIDs = append(r.promptIDs, int(hashUint(im.hash, uint64(k))&0x7fffffff))
		}
		h = hashUint(h, im.hash)
	}
	r.promptHash = h
	return nil
}

// jsonError turns a decoding error into a 400 that names the field where it can.
func jsonError(err error) *apiError {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return badRequest(field, "field `%s` has the wrong type: got JSON %s, want %s", field, te.Value, te.Type)
	case errors.As(err, &se):
		return badRequest("", "request body is not valid JSON at byte %d: %v", se.Offset, err)
	case errors.Is(err, io.EOF):
		return badRequest("", "request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "request body is truncated JSON")
	default:
		return badRequest("", "request body is not a valid request: %v", err)
	}
}

// appendJSONString appends s as a JSON string literal (HTML-safe, invalid UTF-8 replaced).
func appendJSONString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		out, _ := json.Marshal(s)
		return append(b, out...)
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || (c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&') {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
