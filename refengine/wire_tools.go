package refengine

import (
	"bytes"
	"fmt"
	"strings"
)

// decodeStructured validates tools, tool_choice and response_format (kept for the answer,
// answer.go). Each error names the field, as OpenAI and vLLM do.
func (r *request) decodeStructured(wr *wireRequest) *apiError {
	if present(wr.Tools) {
		if err := r.decodeTools(wr.Tools); err != nil {
			return err
		}
	}
	if present(wr.ToolChoice) {
		if err := r.decodeToolChoice(wr.ToolChoice); err != nil {
			return err
		}
	}
	if present(wr.ResponseFormat) {
		return r.decodeResponseFormat(wr.ResponseFormat)
	}
	return nil
}

// present reports whether a raw JSON field holds a value other than null.
func present(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// decodeTools validates a chat request's tools: function tools with valid names and object
// parameters.
func (r *request) decodeTools(raw []byte) *apiError {
	if !r.chat {
		return badRequest("tools", "`tools` apply to /v1/chat/completions, not completions")
	}
	v, err := parseJSON(raw)
	if err != nil || v.kind != 'a' {
		return badRequest("tools", "`tools` must be an array of {\"type\":\"function\",\"function\":{\"name\",…}}")
	}
	for i, t := range v.vals {
		p := fmt.Sprintf("tools[%d]", i)
		if t.kind != 'o' {
			return badRequest(p, "%s must be an object {\"type\":\"function\",\"function\":{…}}", p)
		}
		if typ := t.get("type"); typ != nil && typ.text() != "function" {
			return badRequest(p+".type", "%s.type must be \"function\"", p)
		}
		fn := t.get("function")
		if fn == nil || fn.kind != 'o' {
			return badRequest(p+".function", "%s.function must be an object with a name", p)
		}
		if !validToolName(fn.get("name").text()) {
			return badRequest(p+".function.name", "%s.function.name must be 1-64 letters, digits, '_' or '-'", p)
		}
		if params := fn.get("parameters"); params != nil && params.kind != 'o' {
			return badRequest(p+".function.parameters", "%s.function.parameters must be a JSON Schema object", p)
		}
	}
	r.tools = v
	return nil
}

// decodeToolChoice validates tool_choice: "none", "auto", "required" (with tools) or a named
// function among the tools.
func (r *request) decodeToolChoice(raw []byte) *apiError {
	v, err := parseJSON(raw)
	if err != nil {
		return badRequest("tool_choice", "`tool_choice` must be \"none\", \"auto\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":…}}")
	}
	switch v.kind {
	case 's':
		switch v.str {
		case "none", "auto":
		case "required":
			if r.tools == nil {
				return badRequest("tool_choice", "tool_choice \"required\" needs `tools`")
			}
		default:
			return badRequest("tool_choice", "tool_choice %q: want \"none\", \"auto\", \"required\" or a named function", v.str)
		}
	case 'o':
		name := v.get("function").get("name").text()
		if name == "" {
			return badRequest("tool_choice", "tool_choice must name a function: {\"type\":\"function\",\"function\":{\"name\":…}}")
		}
		found := false
		if r.tools != nil {
			for _, t := range r.tools.vals {
				found = found || t.get("function").get("name").text() == name
			}
		}
		if !found {
			return badRequest("tool_choice", "tool_choice names function %q, which is not in `tools`", name)
		}
	default:
		return badRequest("tool_choice", "`tool_choice` must be a string or an object")
	}
	r.toolChoice = v
	return nil
}

// decodeResponseFormat validates response_format: text (kept as none), json_object, or
// json_schema with a schema object.
func (r *request) decodeResponseFormat(raw []byte) *apiError {
	v, err := parseJSON(raw)
	if err != nil || v.kind != 'o' {
		return badRequest("response_format", "`response_format` must be an object such as {\"type\":\"json_object\"}")
	}
	switch typ := v.get("type").text(); typ {
	case "text":
		return nil
	case "json_object":
	case "json_schema":
		if s := v.get("json_schema").get("schema"); s == nil || s.kind != 'o' {
			return badRequest("response_format.json_schema.schema", "response_format json_schema needs json_schema.schema, a JSON Schema object")
		}
	default:
		return badRequest("response_format.type", "response_format.type %q: want text, json_object or json_schema", typ)
	}
	r.format = v
	return nil
}

func validToolName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isAlnum(c) || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// answerText is the text an answer is read from: the contents, each followed by a newline.
func (r *request) answerText() string {
	if len(r.contents) == 1 && !r.chat {
		return r.contents[0]
	}
	var b strings.Builder
	for _, c := range r.contents {
		b.WriteString(c)
		b.WriteByte('\n')
	}
	return b.String()
}
