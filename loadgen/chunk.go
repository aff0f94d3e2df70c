package loadgen

import (
	"bytes"
	"errors"
	"github.com/llmbench/llmbench/metrics"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// chunkFields is what one OpenAI-style JSON object (a streamed chunk or a whole non-streaming
// response) says about the request. Byte slices alias the parsed input or the scratch buffer
// handed to parseChunk and are valid only until either is reused.
type chunkFields struct {
	// text is the generated text of choices[0]: "text" (completions), or "content",
	// "reasoning_content"/"reasoning" and the tool-call fragments (function name and
	// arguments of every "tool_calls" element) of "delta" (streamed chat) or "message" (whole
	// chat). reasoningBytes of it came from reasoning fields; answer reports that some came
	// from an answer field (text, content or a tool call); toolCall that a tool call did.
	text           []byte
	reasoningBytes int
	answer         bool
	toolCall       bool
	// choice reports that choices held at least one element; role that it named a role.
	choice bool
	role   bool
	// finish reports a non-null finish_reason.
	finish bool
	// usage reports a non-null usage object; its counts are -1 when absent or null, and
	// reasoningTokens is completion_tokens_details.reasoning_tokens. usageBad names the
	// first count that is not a plausible token count (negative, fractional, out of range or
	// not a number); that count reads -1.
	usage            bool
	promptTokens     int64
	completionTokens int64
	reasoningTokens  int64
	usageBad         string
	// cachedTokens is the prompt tokens the server found in its prefix cache and cacheWrite
	// the tokens Messages wrote to it (-1: not reported); cacheSrc names the field
	// (metrics.CacheFrom*, "" when none was seen).
	cachedTokens int64
	cacheWrite   int64
	cacheSrc     string
	// id is the raw (still escaped) response id.
	id []byte
	// isError reports an error object ({"error":...} or {"object":"error",...}); errMsg is
	// its message, unescaped.
	isError bool
	errMsg  []byte
	// message is a top-level "message" string, unescaped: the message of an error that comes
	// as an SSE "error" field holding {"code","message","type"} (earlier llama.cpp builds).
	message []byte

	// spec is the speculative decoding the response reported (specfields.go).
	spec specFields
}

var errJSON = errors.New("invalid JSON")

// parseChunk extracts the fields llmbench needs from one JSON object without building a
// generic tree: it walks the bytes once, skips what it does not need and unescapes generated
// text into scratch (returned, possibly grown, for reuse). It allocates nothing unless scratch
// must grow or an error message has to be copied.
func parseChunk(b []byte, f *chunkFields, scratch []byte) ([]byte, error) {
	resetFields(f)
	s := scanner{b: b}
	var err error
	scratch = scratch[:0]
	isErrObject := false
	var topMsg []byte
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "choices":
			scratch, err = s.choices(f, scratch)
			return err == nil
		case "usage":
			return s.usage(f)
		case "timings":
			return s.timings(f)
		case "meta_info": // SGLang (specfields.go)
			return s.metaInfo(f)
		case "id":
			if s.peek() == '"' {
				raw, _, ok := s.str()
				f.id = raw
				return ok
			}
			return s.skip()
		case "error":
			f.isError = true
			return s.errorValue(f)
		case "object":
			if s.peek() == '"' {
				raw, _, ok := s.str()
				isErrObject = string(raw) == "error"
				return ok
			}
			return s.skip()
		case "message":
			if s.peek() == '"' {
				raw, esc, ok := s.str()
				if ok {
					topMsg = unescapeCopy(raw, esc)
				}
				return ok
			}
			return s.skip()
		}
		return s.skip()
	})
	if err != nil {
		return scratch, err
	}
	if !ok {
		return scratch, s.fail()
	}
	s.ws()
	if s.i != len(s.b) {
		return scratch, s.fail()
	}
	f.message = topMsg
	if isErrObject {
		f.isError = true
		if f.errMsg == nil {
			f.errMsg = topMsg
		}
	}
	f.text = scratch
	return scratch, nil
}

// scanner walks JSON bytes. Its methods return false on malformed input.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) fail() error { return errJSON }

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) consume(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// object walks an object, calling field with each key positioned at its value; field must
// consume the value. A null value counts as an empty object.
func (s *scanner) object(field func(key []byte) bool) bool {
	if s.null() {
		return true
	}
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		key, _, ok := s.str()
		if !ok || !s.consume(':') {
			return false
		}
		s.ws()
		if !field(key) {
			return false
		}
		if s.consume(',') {
			continue
		}
		return s.consume('}')
	}
}

// null consumes a null literal if one is next.
func (s *scanner) null() bool {
	if s.peek() == 'n' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str consumes a string and returns its raw contents and whether they contain escapes. It
// finds the closing quote with bytes.IndexByte; control characters inside strings are
// tolerated (this is an extractor, not a validator).
func (s *scanner) str() (raw []byte, escaped bool, ok bool) {
	if !s.consume('"') {
		return nil, false, false
	}
	start := s.i
	for {
		j := bytes.IndexByte(s.b[s.i:], '"')
		if j < 0 {
			return nil, false, false
		}
		end := s.i + j
		k := end
		for k > start && s.b[k-1] == '\\' {
			k--
		}
		s.i = end + 1
		if (end-k)%2 == 1 {
			escaped = true // an escaped quote: keep looking
			continue
		}
		if !escaped && bytes.IndexByte(s.b[start:end], '\\') >= 0 {
			escaped = true
		}
		return s.b[start:end], escaped, true
	}
}

// skip consumes any value.
func (s *scanner) skip() bool {
	switch c := s.peek(); {
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == '{' || c == '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		_, ok := s.number()
		return ok
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// number consumes a JSON number and returns its integer part (fractions are truncated, and
// magnitudes beyond 2^58 saturate there); count reads numbers exactly.
func (s *scanner) number() (int64, bool) {
	start := s.i
	neg := false
	if s.i < len(s.b) && s.b[s.i] == '-' {
		neg = true
		s.i++
	}
	var v int64
	digits := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if v < 1<<58 {
			v = v*10 + int64(s.b[s.i]-'0')
		}
		s.i++
		digits++
	}
	if digits == 0 {
		s.i = start
		return 0, false
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		if (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
			s.i++
			continue
		}
		break
	}
	if neg {
		v = -v
	}
	return v, true
}

// MaxUsageCount bounds a token count a server reports in usage: no model has a context of a
// billion tokens, so a larger count is a defect of the server, never a measurement.
const MaxUsageCount = 1 << 30

// count consumes a token count of a usage object: a number or null (-1, not reported). A
// count that is not a whole number in [0, MaxUsageCount] (negative, fractional, beyond the
// bound, or a string or other value) reads -1, and bad explains it. Integers are read
// exactly, whatever their length, and so are exponent forms (1e3 is 1000; 1e+300 is out of
// range).
func (s *scanner) count(name string, bad *string) (int64, bool) {
	if s.null() {
		return -1, true
	}
	c := s.peek()
	start := s.i
	if c != '-' && (c < '0' || c > '9') {
		if !s.skip() {
			return 0, false
		}
		s.noteBad(bad, name, "is not a number", s.b[start:s.i])
		return -1, true
	}
	if _, ok := s.number(); !ok {
		return 0, false
	}
	raw := s.b[start:s.i]
	if v, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		switch {
		case v < 0:
			s.noteBad(bad, name, "is negative", raw)
		case v > MaxUsageCount:
			s.noteBad(bad, name, "is out of range", raw)
		default:
			return v, true
		}
		return -1, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return 0, false // not a JSON number after all (e.g. "1-2")
	case f < 0:
		s.noteBad(bad, name, "is negative", raw)
	case err != nil || f > MaxUsageCount:
		s.noteBad(bad, name, "is out of range", raw)
	case f != float64(int64(f)):
		s.noteBad(bad, name, "is not a whole number", raw)
	default:
		return int64(f), true
	}
	return -1, true
}

// noteBad records the first implausible usage count.
func (s *scanner) noteBad(bad *string, name, why string, raw []byte) {
	if *bad == "" {
		*bad = "usage." + name + " " + strconv.Quote(string(clip(raw, 40))) + " " + why
	}
}

// appendText consumes a string (appending it unescaped to dst) or skips any other value.
func (s *scanner) appendText(dst []byte) ([]byte, bool) {
	if s.peek() != '"' {
		return dst, s.skip()
	}
	raw, esc, ok := s.str()
	if !ok {
		return dst, false
	}
	if !esc {
		return append(dst, raw...), true
	}
	return unescape(dst, raw)
}

func (s *scanner) choices(f *chunkFields, scratch []byte) ([]byte, error) {
	if s.null() {
		return scratch, nil
	}
	if !s.consume('[') {
		return scratch, errJSON
	}
	if s.consume(']') {
		return scratch, nil
	}
	f.choice = true
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "text":
			n := len(scratch)
			var ok bool
			scratch, ok = s.appendText(scratch)
			f.answer = f.answer || len(scratch) > n
			return ok
		case "delta", "message":
			return s.object(func(k []byte) bool {
				switch string(k) {
				case "content":
					n := len(scratch)
					var ok bool
					scratch, ok = s.appendText(scratch)
					f.answer = f.answer || len(scratch) > n
					return ok
				case "reasoning_content", "reasoning":
					n := len(scratch)
					var ok bool
					scratch, ok = s.appendText(scratch)
					f.reasoningBytes += len(scratch) - n
					return ok
				case "tool_calls":
					n := len(scratch)
					var ok bool
					scratch, ok = s.toolCalls(scratch)
					if len(scratch) > n {
						f.answer, f.toolCall = true, true
					}
					return ok
				case "role":
					f.role = true
				}
				return s.skip()
			})
		case "finish_reason":
			if s.null() {
				return true
			}
			f.finish = true
		}
		return s.skip()
	})
	if !ok {
		return scratch, errJSON
	}
	for s.consume(',') {
		if !s.skip() {
			return scratch, errJSON
		}
	}
	if !s.consume(']') {
		return scratch, errJSON
	}
	return scratch, nil
}

func (s *scanner) usage(f *chunkFields) bool { return s.usageOf(f, &openAIUsage) }

// usageKeys names an API's usage fields: the prompt and completion counts, the details
// object holding reasoning_tokens ("" when the API has none), the prompt's details object
// holding cached_tokens, or (Messages) the cache read and write counts beside the prompt's.
type usageKeys struct {
	prompt, completion, details string
	reasoning                   string // details + ".reasoning_tokens", for messages
	promptDetails               string // the object holding cached_tokens ("": none)
	cachedName                  string // promptDetails + ".cached_tokens", for error messages
	cacheRead, cacheWrite       string // Messages' cache counts ("": none)
	cacheSrc                    string // metrics.CacheFrom* of this API's cached count
}

var (
	openAIUsage = usageKeys{prompt: "prompt_tokens", completion: "completion_tokens",
		details: "completion_tokens_details", reasoning: "completion_tokens_details.reasoning_tokens",
		promptDetails: "prompt_tokens_details", cachedName: "prompt_tokens_details.cached_tokens",
		cacheSrc: metrics.CacheFromPromptDetails}
	responsesUsage = usageKeys{prompt: "input_tokens", completion: "output_tokens",
		details: "output_tokens_details", reasoning: "output_tokens_details.reasoning_tokens",
		promptDetails: "input_tokens_details", cachedName: "input_tokens_details.cached_tokens",
		cacheSrc: metrics.CacheFromInputDetails}
	messagesUsage = usageKeys{prompt: "input_tokens", completion: "output_tokens",
		cacheRead: "cache_read_input_tokens", cacheWrite: "cache_creation_input_tokens",
		cacheSrc: metrics.CacheFromMessages}
)

// usageOf reads a usage object named by k: the prompt and completion counts, inside the
// details object the reasoning tokens, and the prompt tokens read from (or, Messages,
// written to) the prefix cache. Messages' input_tokens counts only the prompt tokens after
// the last cache breakpoint, so the prompt is their sum with the cache counts.
func (s *scanner) usageOf(f *chunkFields, k *usageKeys) bool {
	if s.null() {
		return true
	}
	f.usage = true
	prompt := int64(-1)
	ok := s.object(func(key []byte) bool {
		var ok bool
		switch {
		case string(key) == k.prompt:
			prompt, ok = s.count(k.prompt, &f.usageBad)
			return ok
		case string(key) == k.completion:
			f.completionTokens, ok = s.count(k.completion, &f.usageBad)
			return ok
		case k.details != "" && string(key) == k.details:
			return s.detail(f, "reasoning_tokens", k.reasoning, &f.reasoningTokens)
		case k.promptDetails != "" && string(key) == k.promptDetails:
			return s.detail(f, "cached_tokens", k.cachedName, &f.cachedTokens) &&
				s.noteCache(f, k)
		case k.cacheRead != "" && string(key) == k.cacheRead:
			f.cachedTokens, ok = s.count(k.cacheRead, &f.usageBad)
			return ok && s.noteCache(f, k)
		case k.cacheWrite != "" && string(key) == k.cacheWrite:
			f.cacheWrite, ok = s.count(k.cacheWrite, &f.usageBad)
			return ok && s.noteCache(f, k)
		}
		return s.skip()
	})
	if prompt >= 0 && k.cacheRead != "" {
		prompt += max(f.cachedTokens, 0) + max(f.cacheWrite, 0)
	}
	if prompt >= 0 {
		f.promptTokens = prompt
	}
	return ok
}

// noteCache names k's source once a cache count was read (a null or bad one names none).
func (s *scanner) noteCache(f *chunkFields, k *usageKeys) bool {
	if f.cachedTokens >= 0 || f.cacheWrite >= 0 {
		f.cacheSrc = k.cacheSrc
	}
	return true
}

// detail reads the count named field of a details object into dst (named full in errors);
// a value that is not an object is skipped.
func (s *scanner) detail(f *chunkFields, field, full string, dst *int64) bool {
	if s.peek() != '{' {
		return s.skip()
	}
	return s.object(func(d []byte) bool {
		if string(d) == field {
			var ok bool
			*dst, ok = s.count(full, &f.usageBad)
			return ok
		}
		return s.skip()
	})
}

// timings reads llama.cpp's timings object: cache_n is the prompt tokens its slot reused.
func (s *scanner) timings(f *chunkFields) bool {
	if s.peek() != '{' {
		return s.skip()
	}
	return s.object(func(key []byte) bool {
		if ok, handled := s.timingsSpec(f, key); handled { // specfields.go
			return ok
		}
		if string(key) != "cache_n" {
			return s.skip()
		}
		var ok bool
		f.cachedTokens, ok = s.count("timings.cache_n", &f.usageBad)
		if f.cachedTokens >= 0 {
			f.cacheSrc = metrics.CacheFromTimings
		}
		return ok
	})
}

// elements walks an array, calling each once per element positioned at it; each must consume
// the element. A value that is not an array is skipped.
func (s *scanner) elements(each func() bool) bool {
	if s.peek() != '[' {
		return s.skip()
	}
	s.i++
	if s.consume(']') {
		return true
	}
	for {
		if !each() {
			return false
		}
		if s.consume(',') {
			continue
		}
		return s.consume(']')
	}
}

func (s *scanner) toolCalls(dst []byte) ([]byte, bool) {
	if s.peek() != '[' {
		return dst, s.skip()
	}
	s.i++
	if s.consume(']') {
		return dst, true
	}
	for {
		if s.peek() != '{' {
			if !s.skip() {
				return dst, false
			}
		} else {
			ok := s.object(func(k []byte) bool {
				if string(k) != "function" || s.peek() != '{' {
					return s.skip()
				}
				return s.object(func(k []byte) bool {
					switch string(k) {
					case "name", "arguments":
						var ok bool
						dst, ok = s.appendText(dst)
						return ok
					}
					return s.skip()
				})
			})
			if !ok {
				return dst, false
			}
		}
		if s.consume(',') {
			continue
		}
		return dst, s.consume(']')
	}
}

// errorValue reads the value of an "error" key: an object with a message, or a string.
func (s *scanner) errorValue(f *chunkFields) bool {
	switch s.peek() {
	case '"':
		raw, esc, ok := s.str()
		f.errMsg = unescapeCopy(raw, esc)
		return ok
	case '{':
		return s.object(func(key []byte) bool {
			if string(key) == "message" && s.peek() == '"' {
				raw, esc, ok := s.str()
				f.errMsg = unescapeCopy(raw, esc)
				return ok
			}
			return s.skip()
		})
	}
	return s.skip()
}

func unescapeCopy(raw []byte, esc bool) []byte {
	if !esc {
		return append([]byte(nil), raw...)
	}
	out, _ := unescape(nil, raw)
	return out
}

// unescape appends the JSON string contents raw, with escapes resolved, to dst. Invalid
// \u escapes and lone surrogates become U+FFFD.
func unescape(dst, raw []byte) ([]byte, bool) {
	for i := 0; i < len(raw); {
		j := i
		for j < len(raw) && raw[j] != '\\' {
			j++
		}
		dst = append(dst, raw[i:j]...)
		if j >= len(raw) {
			break
		}
		if j+1 >= len(raw) {
			return dst, false
		}
		c := raw[j+1]
		i = j + 2
		switch c {
		case '"', '\\', '/':
			dst = append(dst, c)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(raw, i)
			if !ok {
				return dst, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(-1), false
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					r2, ok2 = hex4(raw, i+2)
				}
				if ok2 {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, false
		}
	}
	return dst, true
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
