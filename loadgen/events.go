package loadgen

// Readers of the Responses, Messages and embeddings wires (api.go cites the formats). Each
// fills the same chunkFields that parseChunk fills for completions and chat, so the token
// accounting (count.go) and the failure rules do not depend on the API. Like parseChunk they
// walk the bytes once and allocate nothing unless scratch must grow or an error message is
// copied: BenchmarkParseAPIEvents measured (on a shared 2-core machine) 1.2 µs and 0 allocations
// per Responses text event against 21 µs and 11 allocations for encoding/json into the same
// fields, and 0.75 µs / 0 against 6.5 µs / 14 per Messages event.

// parseAPI parses one streamed event's data for api. final reports the event that ends the
// stream (Responses: response.completed or response.incomplete; Messages: message_stop).
func parseAPI(api string, b []byte, f *chunkFields, scratch []byte) (out []byte, final bool, err error) {
	switch api {
	case "responses":
		return parseResponsesEvent(b, f, scratch)
	case "messages":
		return parseMessagesEvent(b, f, scratch)
	}
	out, err = parseChunk(b, f, scratch)
	return out, false, err
}

// parseWhole parses a non-streaming response body for api.
func parseWhole(api string, b []byte, f *chunkFields) error {
	var err error
	switch api {
	case "responses":
		_, err = parseResponseObject(b, f, nil)
	case "messages":
		_, err = parseMessageObject(b, f, nil)
	default:
		_, err = parseChunk(b, f, nil)
	}
	return err
}

func resetFields(f *chunkFields) {
	*f = chunkFields{promptTokens: -1, completionTokens: -1, reasoningTokens: -1, cachedTokens: -1, cacheWrite: -1}
	f.spec.reset()
}

// finishTop checks that nothing follows the top-level object.
func (s *scanner) finishTop(ok bool) error {
	if !ok {
		return errJSON
	}
	s.ws()
	if s.i != len(s.b) {
		return errJSON
	}
	return nil
}

// strValue consumes a string value (returned raw) or skips any other value (nil).
func (s *scanner) strValue() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, s.skip()
	}
	raw, _, ok := s.str()
	return raw, ok
}

// textValue appends a string value to dst and reports how many bytes it added.
func (s *scanner) textValue(dst []byte) ([]byte, int, bool) {
	n := len(dst)
	dst, ok := s.appendText(dst)
	return dst, len(dst) - n, ok
}

// parseResponsesEvent reads one event of a streamed Responses call: {"type":..., ...}. The
// text of response.output_text.delta and response.refusal.delta (answer),
// response.reasoning_text.delta /
// response.reasoning_summary_text.delta (reasoning) and response.function_call_arguments.delta
// (a tool call) is generated output; the usage is in the "response" of response.completed.
// An "error" event or response.failed is an error.
func parseResponsesEvent(b []byte, f *chunkFields, scratch []byte) ([]byte, bool, error) {
	resetFields(f)
	s := scanner{b: b}
	scratch = scratch[:0]
	var typ, msg []byte
	var msgEsc bool
	deltaAt := -1 // offset of the "delta" value, read once the type is known
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			var ok bool
			typ, ok = s.strValue()
			return ok
		case "delta":
			deltaAt = s.i
			return s.skip()
		case "response":
			return s.responseObject(f)
		case "message":
			if s.peek() == '"' {
				raw, esc, ok := s.str()
				msg, msgEsc = raw, esc
				return ok
			}
			return s.skip()
		case "error":
			f.isError = true
			return s.errorValue(f)
		}
		return s.skip()
	})
	if err := s.finishTop(ok); err != nil {
		return scratch, false, err
	}
	t := string(typ)
	if deltaAt >= 0 && (t == "response.output_text.delta" || t == "response.refusal.delta" || t == "response.reasoning_text.delta" ||
		t == "response.reasoning_summary_text.delta" || t == "response.function_call_arguments.delta") {
		d := scanner{b: b, i: deltaAt}
		var n int
		scratch, n, ok = d.textValue(scratch)
		if !ok {
			return scratch, false, errJSON
		}
		switch t {
		case "response.output_text.delta", "response.refusal.delta":
			f.answer = n > 0
		case "response.function_call_arguments.delta":
			f.answer, f.toolCall = n > 0, n > 0
		default:
			f.reasoningBytes = n
		}
	}
	switch t {
	case "error", "response.failed":
		f.isError = true
		if f.errMsg == nil && msg != nil {
			f.errMsg = unescapeCopy(msg, msgEsc)
		}
		if f.errMsg == nil {
			f.errMsg = []byte(t)
		}
	}
	f.text = scratch
	return scratch, t == "response.completed" || t == "response.incomplete", nil
}

// idValue reads a response or message id into f.id (a null leaves it unset).
func (s *scanner) idValue(f *chunkFields) bool {
	raw, ok := s.strValue()
	if raw != nil {
		f.id = raw
	}
	return ok
}

// responseObject reads the "response" object of a streamed event: its id, usage and error
// (its output repeats text already streamed and is skipped).
func (s *scanner) responseObject(f *chunkFields) bool {
	if s.peek() != '{' {
		return s.skip()
	}
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return s.idValue(f)
		case "usage":
			return s.usageOf(f, &responsesUsage)
		case "error":
			if s.null() {
				return true
			}
			f.isError = true
			return s.errorValue(f)
		}
		return s.skip()
	})
}

// outputItems reads a Responses "output" array: the text of each item's content parts (a
// "reasoning" item's is reasoning, a "message" item's the answer) and function call arguments.
func (s *scanner) outputItems(f *chunkFields, scratch []byte) ([]byte, bool) {
	ok := s.elements(func() bool {
		start := len(scratch)
		var typ []byte
		ok := s.object(func(k []byte) bool {
			switch string(k) {
			case "type":
				var ok bool
				typ, ok = s.strValue()
				return ok
			case "arguments":
				var ok bool
				scratch, ok = s.appendText(scratch)
				return ok
			case "content", "summary":
				return s.elements(func() bool {
					return s.object(func(k []byte) bool {
						if string(k) == "text" || string(k) == "refusal" {
							var ok bool
							scratch, ok = s.appendText(scratch)
							return ok
						}
						return s.skip()
					})
				})
			}
			return s.skip()
		})
		if n := len(scratch) - start; ok && n > 0 {
			switch string(typ) {
			case "reasoning":
				f.reasoningBytes += n
			case "function_call":
				f.answer, f.toolCall = true, true
			default:
				f.answer = true
			}
		}
		return ok
	})
	return scratch, ok
}

// parseResponseObject reads a non-streaming Responses body (a response object, or an error).
func parseResponseObject(b []byte, f *chunkFields, scratch []byte) ([]byte, error) {
	resetFields(f)
	s := scanner{b: b}
	var status []byte
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return s.idValue(f)
		case "usage":
			return s.usageOf(f, &responsesUsage)
		case "status":
			var ok bool
			status, ok = s.strValue()
			return ok
		case "error":
			if s.null() {
				return true
			}
			f.isError = true
			return s.errorValue(f)
		case "output":
			var ok bool
			scratch, ok = s.outputItems(f, scratch)
			return ok
		}
		return s.skip()
	})
	if err := s.finishTop(ok); err != nil {
		return scratch, err
	}
	if string(status) == "failed" && !f.isError {
		f.isError, f.errMsg = true, []byte("response status failed")
	}
	f.text = scratch
	return scratch, nil
}

// parseMessagesEvent reads one event of a streamed Anthropic Messages call. content_block_delta
// carries text ("text" of a text_delta: the answer; "thinking" of a thinking_delta: reasoning;
// "partial_json" of an input_json_delta: a tool call); message_start carries the usage of the
// prompt (message.usage.input_tokens) and message_delta the cumulative output count
// (usage.output_tokens). An "error" event is an error.
func parseMessagesEvent(b []byte, f *chunkFields, scratch []byte) ([]byte, bool, error) {
	resetFields(f)
	s := scanner{b: b}
	scratch = scratch[:0]
	var typ []byte
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			var ok bool
			typ, ok = s.strValue()
			return ok
		case "message":
			return s.messageObject(f)
		case "delta":
			if s.peek() != '{' {
				return s.skip()
			}
			return s.object(func(k []byte) bool {
				var n int
				var ok bool
				switch string(k) {
				case "text":
					scratch, n, ok = s.textValue(scratch)
					f.answer = f.answer || n > 0
					return ok
				case "partial_json":
					scratch, n, ok = s.textValue(scratch)
					if n > 0 {
						f.answer, f.toolCall = true, true
					}
					return ok
				case "thinking":
					scratch, n, ok = s.textValue(scratch)
					f.reasoningBytes += n
					return ok
				}
				return s.skip()
			})
		case "usage":
			return s.usageOf(f, &messagesUsage)
		case "error":
			f.isError = true
			return s.errorValue(f)
		}
		return s.skip()
	})
	if err := s.finishTop(ok); err != nil {
		return scratch, false, err
	}
	if string(typ) == "error" {
		f.isError = true
		if f.errMsg == nil {
			f.errMsg = []byte("error event")
		}
	}
	f.text = scratch
	return scratch, string(typ) == "message_stop", nil
}

// messageObject reads the message of message_start: its id and usage (its content is empty).
func (s *scanner) messageObject(f *chunkFields) bool {
	if s.peek() != '{' {
		return s.skip()
	}
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return s.idValue(f)
		case "usage":
			return s.usageOf(f, &messagesUsage)
		}
		return s.skip()
	})
}

// contentBlocks reads an Anthropic content array: "text" blocks are the answer, "thinking"
// blocks reasoning.
func (s *scanner) contentBlocks(f *chunkFields, scratch []byte) ([]byte, bool) {
	ok := s.elements(func() bool {
		return s.object(func(k []byte) bool {
			var n int
			var ok bool
			switch string(k) {
			case "text":
				scratch, n, ok = s.textValue(scratch)
				f.answer = f.answer || n > 0
				return ok
			case "thinking":
				scratch, n, ok = s.textValue(scratch)
				f.reasoningBytes += n
				return ok
			}
			return s.skip()
		})
	})
	return scratch, ok
}

// parseMessageObject reads a non-streaming Messages body (a message, or an error object).
func parseMessageObject(b []byte, f *chunkFields, scratch []byte) ([]byte, error) {
	resetFields(f)
	s := scanner{b: b}
	var typ []byte
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			var ok bool
			typ, ok = s.strValue()
			return ok
		case "id":
			return s.idValue(f)
		case "usage":
			return s.usageOf(f, &messagesUsage)
		case "content":
			var ok bool
			scratch, ok = s.contentBlocks(f, scratch)
			return ok
		case "error":
			f.isError = true
			return s.errorValue(f)
		}
		return s.skip()
	})
	if err := s.finishTop(ok); err != nil {
		return scratch, err
	}
	if string(typ) == "error" && !f.isError {
		f.isError, f.errMsg = true, []byte("error response")
	}
	f.text = scratch
	return scratch, nil
}

// embeddingFields is what an embeddings response says.
type embeddingFields struct {
	// vectors counts the elements of "data" that hold a non-empty embedding (an array of
	// numbers, or a base64 string).
	vectors      int
	items        int
	promptTokens int64 // usage.prompt_tokens (-1: none)
	usage        bool
	usageBad     string
	isError      bool
	errMsg       []byte
}

// parseEmbeddings reads a non-streaming embeddings body:
// {"object":"list","data":[{"object":"embedding","embedding":[...],"index":0},...],
// "model":...,"usage":{"prompt_tokens":N,"total_tokens":N}} or an error object.
func parseEmbeddings(b []byte, e *embeddingFields) error {
	*e = embeddingFields{promptTokens: -1}
	s := scanner{b: b}
	var f chunkFields
	resetFields(&f)
	isErrObject := false
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "data":
			if s.null() {
				return true
			}
			if !s.consume('[') {
				return false
			}
			if s.consume(']') {
				return true
			}
			for {
				e.items++
				ok := s.object(func(k []byte) bool {
					if string(k) != "embedding" {
						return s.skip()
					}
					start := s.i
					if !s.skip() {
						return false
					}
					raw := s.b[start:s.i]
					if n := len(raw); n > 2 && (raw[0] == '[' || raw[0] == '"') {
						e.vectors++
					}
					return true
				})
				if !ok {
					return false
				}
				if s.consume(',') {
					continue
				}
				return s.consume(']')
			}
		case "usage":
			if s.null() {
				return true
			}
			e.usage = true
			return s.object(func(k []byte) bool {
				if string(k) == "prompt_tokens" {
					var ok bool
					e.promptTokens, ok = s.count("prompt_tokens", &e.usageBad)
					return ok
				}
				return s.skip()
			})
		case "error":
			f.isError = true
			return s.errorValue(&f)
		case "object":
			raw, ok := s.strValue()
			isErrObject = string(raw) == "error"
			return ok
		}
		return s.skip()
	})
	if err := s.finishTop(ok); err != nil {
		return err
	}
	e.isError, e.errMsg = f.isError || isErrObject, f.errMsg
	return nil
}
