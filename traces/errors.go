package traces

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/safetext"
)

// Bounds on the parts of a LineError message: a 2 MB key or a 100 MB line must not become a
// 100 MB error, nor print escape sequences to a terminal.
const (
	maxFieldText  = 80
	maxReasonText = 600
	maxFileText   = 300
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
	b.WriteString(safetext.Escape(e.File, maxFileText))
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		if f := safetext.Escape(e.Field, maxFieldText); f == e.Field {
			b.WriteString(f)
		} else {
			b.WriteString(safetext.Quote(e.Field, maxFieldText))
		}
		b.WriteString(": ")
	}
	b.WriteString(safetext.Escape(e.Reason, maxReasonText))
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
		return "string " + safetext.Quote(x, 40)
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
