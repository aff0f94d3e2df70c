package traces

import (
	"fmt"
	"strconv"
	"strings"
)

// LineError is a problem with one line (JSONL) or record (msgpack) of a trace, or with one row of
// an imported file. Its message has the form "file:line: field: reason", for example
//
//	chat.jsonl:17: output_tokens: must be an integer >= 1 (got -3)
//
// Field is empty when the problem concerns the whole line (invalid JSON, truncated line).
type LineError struct {
	File   string
	Line   int
	Field  string
	Reason string
	// Err is an underlying error (a JSON syntax error, an I/O error), if any.
	Err error
}

func (e *LineError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns the underlying error, if any.
func (e *LineError) Unwrap() error { return e.Err }

// describe renders a decoded JSON or msgpack value for a "(got ...)" clause.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return "string " + strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		return "an array"
	case map[string]any, map[any]any:
		return "an object"
	}
	if n, ok := asNumber(v); ok {
		return n.text
	}
	return fmt.Sprintf("%T", v)
}
