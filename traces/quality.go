package traces

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/llmbench/llmbench/internal/jsonschemax"
	"github.com/llmbench/llmbench/internal/safetext"
)

// Quality fields of trace format v1 (issue 17): what a chat request offers the model (tools,
// tool_choice, response_format) and what its response must satisfy (expect). They are
// validated on read like every other field; package quality grades the responses.

const (
	fTools          = "tools"
	fToolChoice     = "tool_choice"
	fResponseFormat = "response_format"
	fExpect         = "expect"
)

// Check kinds of the expect field.
const (
	CheckExact         = "exact"
	CheckContains      = "contains"
	CheckNotContains   = "not_contains"
	CheckRegex         = "regex"
	CheckJSON          = "json"
	CheckJSONSchema    = "json_schema"
	CheckNumber        = "number"
	CheckToolCall      = "tool_call"
	CheckMaxTokensUsed = "max_tokens_used"
)

// CheckKinds lists the check kinds in documentation order.
var CheckKinds = []string{CheckExact, CheckContains, CheckNotContains, CheckRegex, CheckJSON,
	CheckJSONSchema, CheckNumber, CheckToolCall, CheckMaxTokensUsed}

// checkFields says which fields (besides kind) each check kind takes; the first list is
// required, the second optional.
var checkFields = map[string][2][]string{
	CheckExact:         {{"value"}, nil},
	CheckContains:      {{"values"}, {"mode"}},
	CheckNotContains:   {{"values"}, nil},
	CheckRegex:         {{"pattern"}, nil},
	CheckJSON:          {nil, nil},
	CheckJSONSchema:    {{"schema"}, nil},
	CheckNumber:        {{"value"}, {"tolerance"}},
	CheckToolCall:      {nil, {"name", "arguments"}},
	CheckMaxTokensUsed: {{"value"}, nil},
}

// Expectation is one entry of a request's expect list: a condition on the response. Which fields
// are set depends on Kind (traces/FORMAT.md, "Quality checks"):
//
//   - exact: Value is a JSON string; the output, trimmed of surrounding white space, equals it.
//   - contains: Values all appear in the output (Mode "all", the default) or one does ("any").
//   - not_contains: none of Values appears.
//   - regex: Pattern (Go RE2 syntax) matches somewhere in the output.
//   - json: the output parses as JSON.
//   - json_schema: the output parses as JSON and satisfies Schema (JSON Schema, draft 2020-12
//     unless it names another).
//   - number: the first number in the output is within Tolerance (absolute) of Value.
//   - tool_call: the response calls a function of the request's tools (Name, when set, that
//     one), its arguments parse and satisfy the function's parameters schema with no extra
//     fields, and, when Arguments is set, hold those key/values.
//   - max_tokens_used: the response used at most Value output tokens (an integer).
type Expectation struct {
	Kind      string          `json:"kind" msgpack:"kind"`
	Value     json.RawMessage `json:"value,omitempty" msgpack:"-"`
	Values    []string        `json:"values,omitempty" msgpack:"values,omitempty"`
	Mode      string          `json:"mode,omitempty" msgpack:"mode,omitempty"`
	Pattern   string          `json:"pattern,omitempty" msgpack:"pattern,omitempty"`
	Schema    json.RawMessage `json:"schema,omitempty" msgpack:"-"`
	Tolerance float64         `json:"tolerance,omitempty" msgpack:"tolerance,omitempty"`
	Name      string          `json:"name,omitempty" msgpack:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty" msgpack:"-"`
}

// Tool is the part of one entry of a request's tools that grading needs.
type Tool struct {
	Name string
	// Parameters is the function's parameters schema (nil: none given, any arguments object).
	Parameters json.RawMessage
}

// ToolList decodes r.Tools (already validated on read) into name and parameters per function.
func (r *Request) ToolList() []Tool {
	if len(r.Tools) == 0 {
		return nil
	}
	var raw []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if json.Unmarshal(r.Tools, &raw) != nil {
		return nil
	}
	out := make([]Tool, len(raw))
	for i, t := range raw {
		out[i] = Tool{Name: t.Function.Name, Parameters: t.Function.Parameters}
	}
	return out
}

// Limits of the quality fields, checked on read.
const (
	// MaxChecks bounds the entries of expect.
	MaxChecks = 64
	// MaxTools bounds the entries of tools.
	MaxTools = 256
	// MaxPatternBytes bounds a regex check's pattern.
	MaxPatternBytes = 4096
)

// rawJSON re-encodes a decoded JSON or msgpack value as compact JSON (object keys sorted,
// numbers as written, no HTML escaping).
func rawJSON(v any) (json.RawMessage, string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(plainJSON(v)); err != nil {
		return nil, "cannot be encoded as JSON: " + err.Error()
	}
	return json.RawMessage(bytes.TrimRight(b.Bytes(), "\n")), ""
}

// plainJSON turns msgpack's map[any]any into map[string]any, recursively, so that the JSON
// encoder accepts it.
func plainJSON(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = plainJSON(e)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = plainJSON(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = plainJSON(e)
		}
		return s
	}
	return v
}

// msgpackValue decodes JSON text into the value WriteMsgpack encodes: maps and arrays as msgpack
// maps and arrays, integral numbers as integers, others as float64.
func msgpackValue(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return numbersToGo(v)
}

func numbersToGo(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbersToGo(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbersToGo(e)
		}
	case json.Number:
		if n, ok := asNumber(x); ok {
			if n.isInt && strings.IndexAny(string(x), ".eE") < 0 {
				return n.i
			}
			return n.f
		}
	}
	return v
}

// decodeTools validates the OpenAI tools array: objects {"type":"function","function":{"name",
// "description"?, "parameters"?, "strict"?}} with unique names and parameters that compile as
// JSON Schemas.
func decodeTools(v any, opts ReadOptions) (json.RawMessage, []string, []fieldError) {
	arr, ok := v.([]any)
	if !ok {
		return nil, nil, []fieldError{{fTools, `must be an array of {"type":"function","function":{...}} objects (got ` + describe(v) + ")"}}
	}
	if len(arr) == 0 {
		return nil, nil, []fieldError{{fTools, "must hold at least one tool (or leave tools out)"}}
	}
	if len(arr) > MaxTools {
		return nil, nil, []fieldError{{fTools, fmt.Sprintf("must hold at most %d tools (got %d)", MaxTools, len(arr))}}
	}
	var errs []fieldError
	var names []string
	seen := map[string]bool{}
	for i, e := range arr {
		at := fmt.Sprintf("%s[%d]", fTools, i)
		obj, ok := asObject(e)
		if !ok {
			errs = append(errs, fieldError{at, `must be an object {"type":"function","function":{...}} (got ` + describe(e) + ")"})
			continue
		}
		var haveType, haveFn bool
		for _, kv := range obj {
			switch kv.key {
			case "type":
				haveType = true
				if s, _ := kv.val.(string); s != "function" {
					errs = append(errs, fieldError{at + ".type", `must be "function" (got ` + describe(kv.val) + ")"})
				}
			case "function":
				haveFn = true
				name, fe := decodeFunction(kv.val, at+".function", opts)
				errs = append(errs, fe...)
				if name != "" {
					if seen[name] {
						errs = append(errs, fieldError{at + ".function.name", "duplicate tool name " + safetext.Quote(name, 64)})
					}
					seen[name] = true
					names = append(names, name)
				}
			default:
				if !opts.Lenient {
					errs = append(errs, fieldError{at + "." + kv.key, "unknown field (a tool has type and function; read with --lenient to ignore others)"})
				}
				dropKey(e, kv.key)
			}
		}
		if !haveType {
			errs = append(errs, fieldError{at + ".type", `missing (required: "function")`})
		}
		if !haveFn {
			errs = append(errs, fieldError{at + ".function", "missing (required: an object with name and parameters)"})
		}
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	raw, why := rawJSON(v)
	if why != "" {
		return nil, nil, []fieldError{{fTools, why}}
	}
	return raw, names, nil
}

func decodeFunction(v any, at string, opts ReadOptions) (string, []fieldError) {
	obj, ok := asObject(v)
	if !ok {
		return "", []fieldError{{at, "must be an object with name and parameters (got " + describe(v) + ")"}}
	}
	var errs []fieldError
	var name string
	for _, kv := range obj {
		switch kv.key {
		case "name":
			var why string
			name, why = stringField(kv.val, true, "must be a non-empty string")
			if why != "" {
				errs = append(errs, fieldError{at + ".name", why})
			}
		case "description":
			if _, why := stringField(kv.val, false, "must be a string"); why != "" {
				errs = append(errs, fieldError{at + ".description", why})
			}
		case "strict":
			if _, ok := kv.val.(bool); !ok {
				errs = append(errs, fieldError{at + ".strict", "must be true or false (got " + describe(kv.val) + ")"})
			}
		case "parameters":
			if _, ok := asObject(kv.val); !ok {
				errs = append(errs, fieldError{at + ".parameters", "must be a JSON Schema object (got " + describe(kv.val) + ")"})
			} else if why := schemaField(kv.val); why != "" {
				errs = append(errs, fieldError{at + ".parameters", why})
			}
		default:
			if !opts.Lenient {
				errs = append(errs, fieldError{at + "." + kv.key, "unknown field (a function has name, description, parameters and strict; read with --lenient to ignore others)"})
			}
			dropKey(v, kv.key)
		}
	}
	if name == "" && len(errs) == 0 {
		errs = append(errs, fieldError{at + ".name", "missing (required: a non-empty string)"})
	}
	return name, errs
}

// dropKey removes key from a decoded object: a field --lenient ignores is not kept in the
// JSON the trace sends and writes back (a trace written after a lenient read reads strictly).
// With errors (not lenient) the object is not kept at all.
func dropKey(v any, key string) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, key)
	case map[any]any:
		for k := range x {
			if fmt.Sprint(k) == key { // asObject's name for the key
				delete(x, k)
			}
		}
	}
}

// schemaField checks that a decoded value compiles as a JSON Schema.
func schemaField(v any) string {
	raw, why := rawJSON(v)
	if why != "" {
		return why
	}
	if _, err := jsonschemax.Compile(raw); err != nil {
		return err.Error()
	}
	return ""
}

// decodeToolChoice validates tool_choice: "none", "auto", "required", or
// {"type":"function","function":{"name":N}} (N is checked against tools by checkQuality).
func decodeToolChoice(v any) (json.RawMessage, string, string) {
	if s, ok := v.(string); ok {
		switch s {
		case "none", "auto", "required":
			raw, _ := rawJSON(s)
			return raw, "", ""
		}
		return nil, "", `must be "none", "auto", "required" or {"type":"function","function":{"name":...}} (got ` + describe(v) + ")"
	}
	obj, ok := asObject(v)
	bad := `must be "none", "auto", "required" or {"type":"function","function":{"name":...}} (got ` + describe(v) + ")"
	if !ok || len(obj) != 2 {
		return nil, "", bad
	}
	var name string
	for _, kv := range obj {
		switch kv.key {
		case "type":
			if s, _ := kv.val.(string); s != "function" {
				return nil, "", bad
			}
		case "function":
			fn, ok := asObject(kv.val)
			if !ok || len(fn) != 1 || fn[0].key != "name" {
				return nil, "", bad
			}
			name, _ = fn[0].val.(string)
			if name == "" {
				return nil, "", bad
			}
		default:
			return nil, "", bad
		}
	}
	raw, why := rawJSON(v)
	return raw, name, why
}

// decodeResponseFormat validates {"type":"text"}, {"type":"json_object"} or
// {"type":"json_schema","json_schema":{"name":N,"schema":{...},"strict"?,"description"?}}.
func decodeResponseFormat(v any, opts ReadOptions) (json.RawMessage, []fieldError) {
	obj, ok := asObject(v)
	if !ok {
		return nil, []fieldError{{fResponseFormat, `must be an object such as {"type":"json_object"} (got ` + describe(v) + ")"}}
	}
	var typ string
	var js any
	var errs []fieldError
	for _, kv := range obj {
		switch kv.key {
		case "type":
			typ, _ = kv.val.(string)
			if typ != "text" && typ != "json_object" && typ != "json_schema" {
				errs = append(errs, fieldError{fResponseFormat + ".type", `must be "text", "json_object" or "json_schema" (got ` + describe(kv.val) + ")"})
			}
		case "json_schema":
			js = kv.val
		default:
			if !opts.Lenient {
				errs = append(errs, fieldError{fResponseFormat + "." + kv.key, "unknown field (response_format has type and json_schema)"})
			}
			dropKey(v, kv.key)
		}
	}
	switch {
	case typ == "" && len(errs) == 0:
		errs = append(errs, fieldError{fResponseFormat + ".type", `missing (required: "text", "json_object" or "json_schema")`})
	case typ == "json_schema":
		errs = append(errs, decodeJSONSchemaFormat(js, opts)...)
	case js != nil && typ != "":
		errs = append(errs, fieldError{fResponseFormat + ".json_schema", `only goes with "type":"json_schema"`})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	raw, why := rawJSON(v)
	if why != "" {
		return nil, []fieldError{{fResponseFormat, why}}
	}
	return raw, nil
}

// decodeJSONSchemaFormat validates the json_schema object of a response_format of type
// json_schema: a non-empty name, a JSON Schema object, and optionally a description and
// strict. Unknown fields are errors, or dropped with opts.Lenient.
func decodeJSONSchemaFormat(js any, opts ReadOptions) []fieldError {
	at := fResponseFormat + ".json_schema"
	inner, ok := asObject(js)
	if !ok {
		return []fieldError{{at, `must be an object {"name":...,"schema":{...}} (got ` + describe(js) + ")"}}
	}
	var errs []fieldError
	var haveName, haveSchema bool
	for _, kv := range inner {
		var why string
		switch kv.key {
		case "name":
			haveName = true
			_, why = stringField(kv.val, true, "must be a non-empty string")
		case "description":
			_, why = stringField(kv.val, false, "must be a string")
		case "strict":
			if _, ok := kv.val.(bool); !ok {
				why = "must be true or false (got " + describe(kv.val) + ")"
			}
		case "schema":
			haveSchema = true
			if _, ok := asObject(kv.val); !ok {
				why = "must be a JSON Schema object (got " + describe(kv.val) + ")"
			} else {
				why = schemaField(kv.val)
			}
		default:
			if !opts.Lenient {
				why = "unknown field (json_schema has name, description, schema and strict)"
			}
			dropKey(js, kv.key)
		}
		if why != "" {
			errs = append(errs, fieldError{at + "." + kv.key, why})
		}
	}
	if !haveName {
		errs = append(errs, fieldError{at + ".name", "missing (required: a non-empty string)"})
	}
	if !haveSchema {
		errs = append(errs, fieldError{at + ".schema", "missing (required: a JSON Schema object)"})
	}
	return errs
}

// decodeExpect validates the expect list.
func decodeExpect(v any) ([]Expectation, []fieldError) {
	arr, ok := v.([]any)
	if !ok {
		return nil, []fieldError{{fExpect, `must be an array of checks such as {"kind":"contains","values":["..."]} (got ` + describe(v) + ")"}}
	}
	if len(arr) == 0 {
		return nil, []fieldError{{fExpect, "must hold at least one check (or leave expect out)"}}
	}
	if len(arr) > MaxChecks {
		return nil, []fieldError{{fExpect, fmt.Sprintf("must hold at most %d checks (got %d)", MaxChecks, len(arr))}}
	}
	checks := make([]Expectation, 0, len(arr))
	var errs []fieldError
	for i, e := range arr {
		c, fe := decodeCheck(e, fmt.Sprintf("%s[%d]", fExpect, i))
		errs = append(errs, fe...)
		checks = append(checks, c)
	}
	return checks, errs
}

// decodeCheck decodes one check of expect (at is its place, "expect[2]"): its kind, then
// every field, in key order, against the fields that kind needs and takes (checkFields).
func decodeCheck(v any, at string) (Expectation, []fieldError) {
	var c Expectation
	vals, spec, fe := checkKind(v, at, &c)
	if fe != nil {
		return c, fe
	}
	var errs []fieldError
	bad := func(field, why string) { errs = append(errs, fieldError{at + "." + field, why}) }
	allowed := map[string]bool{"kind": true}
	for _, f := range spec[0] {
		allowed[f] = true
		if _, ok := vals[f]; !ok {
			bad(f, "missing (a "+c.Kind+" check needs "+strings.Join(spec[0], " and ")+")")
		}
	}
	for _, f := range spec[1] {
		allowed[f] = true
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !allowed[k] {
			takes := strings.Join(append(append([]string{}, spec[0]...), spec[1]...), ", ")
			if takes == "" {
				takes = "no other field"
			}
			bad(k, "not a field of a "+c.Kind+" check (it takes "+takes+")")
			continue
		}
		if why := c.decodeField(k, vals[k]); why != "" {
			bad(k, why)
		}
	}
	return c, errs
}

// checkKind reads a check's object into its values by key and sets c.Kind; spec is the
// kind's required and optional fields (checkFields). A check that is not an object, or
// whose kind is missing or unknown, is the one error returned.
func checkKind(v any, at string, c *Expectation) (vals map[string]any, spec [2][]string, fe []fieldError) {
	obj, ok := asObject(v)
	if !ok {
		return nil, spec, []fieldError{{at, `must be an object with a "kind" (got ` + describe(v) + ")"}}
	}
	vals = map[string]any{}
	for _, kv := range obj {
		vals[kv.key] = kv.val
	}
	kv, ok := vals["kind"]
	if !ok {
		return nil, spec, []fieldError{{at + ".kind", "missing (required: one of " + strings.Join(CheckKinds, ", ") + ")"}}
	}
	c.Kind, _ = kv.(string)
	spec, known := checkFields[c.Kind]
	if !known {
		return nil, spec, []fieldError{{at + ".kind", "must be one of " + strings.Join(CheckKinds, ", ") + " (got " + describe(kv) + ")"}}
	}
	return vals, spec, nil
}

// decodeField decodes the check's field k (one its kind takes) into c and returns why its
// value is wrong, "" when it is right.
func (c *Expectation) decodeField(k string, val any) (why string) {
	switch k {
	case "value":
		if why = checkValue(c.Kind, val); why == "" {
			c.Value, why = rawJSON(val)
		}
	case "values":
		c.Values, why = stringList(val)
	case "mode":
		c.Mode, _ = val.(string)
		if c.Mode != "all" && c.Mode != "any" {
			why = `must be "all" or "any" (got ` + describe(val) + ")"
		}
	case "pattern":
		c.Pattern, why = checkPattern(val)
	case "schema":
		if why = checkSchema(val); why == "" {
			c.Schema, why = rawJSON(val)
		}
	case "tolerance":
		c.Tolerance, why = floatField(val, "must be a number >= 0")
	case "name":
		c.Name, why = stringField(val, true, "must be a non-empty string (a function name of tools)")
	case "arguments":
		if _, isObj := asObject(val); !isObj {
			why = "must be an object of argument names to expected values (got " + describe(val) + ")"
		} else {
			c.Arguments, why = rawJSON(val)
		}
	}
	return why
}

// checkValue says what is wrong with the value of a check of kind, "" when nothing is.
func checkValue(kind string, val any) (why string) {
	switch kind {
	case CheckExact:
		_, why = stringField(val, false, "must be a string")
	case CheckNumber:
		n, ok := asNumber(val)
		if !ok || math.IsNaN(n.f) || math.IsInf(n.f, 0) {
			why = "must be a finite number (got " + describe(val) + ")"
		}
	case CheckMaxTokensUsed:
		_, why = boundedInt(val, 1, MaxTokens, reasonTokens, boundTokens)
	}
	return why
}

// checkPattern parses a check's pattern: a non-empty RE2 regular expression of at most
// MaxPatternBytes. The pattern is returned with the reason when it is too long or invalid.
func checkPattern(val any) (string, string) {
	p, why := stringField(val, true, "must be a non-empty string (a Go RE2 regular expression)")
	if why == "" && len(p) > MaxPatternBytes {
		why = fmt.Sprintf("must be at most %d bytes (got %d)", MaxPatternBytes, len(p))
	}
	if why == "" {
		if _, err := regexp.Compile(p); err != nil {
			why = "is not a valid RE2 regular expression: " + err.Error()
		}
	}
	return p, why
}

// checkSchema says what is wrong with a check's JSON Schema, "" when nothing is.
func checkSchema(val any) string {
	if _, isObj := asObject(val); !isObj {
		if _, isBool := val.(bool); !isBool {
			return "must be a JSON Schema (an object or a boolean; got " + describe(val) + ")"
		}
	}
	return schemaField(val)
}

func stringList(v any) ([]string, string) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, "must be a non-empty array of strings (got " + describe(v) + ")"
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		s, why := stringField(e, true, "must be a non-empty string")
		if why != "" {
			return nil, fmt.Sprintf("[%d] %s", i, why)
		}
		out[i] = s
	}
	return out, ""
}

// checkQuality checks what relates the quality fields to each other and to the rest of the
// request: tools and response_format go with messages, tool_choice with tools, and tool_call
// checks name a function of tools.
func checkQuality(r *Request, seen map[string]bool, toolNames []string, choiceName string, bad func(field, reason string)) {
	if seen[fTools] && !seen[fMessages] {
		bad(fTools, "needs messages (tools are sent to /v1/chat/completions)")
	}
	if seen[fResponseFormat] && !seen[fMessages] {
		bad(fResponseFormat, "needs messages (response_format is sent to /v1/chat/completions)")
	}
	if seen[fToolChoice] && !seen[fTools] {
		bad(fToolChoice, "needs tools (add \"tools\" or remove \"tool_choice\")")
	}
	has := func(name string) bool {
		for _, n := range toolNames {
			if n == name {
				return true
			}
		}
		return false
	}
	if choiceName != "" && len(toolNames) > 0 && !has(choiceName) {
		bad(fToolChoice+".function.name", safetext.Quote(choiceName, 64)+" is not a function of tools")
	}
	for i, c := range r.Expect {
		if c.Kind != CheckToolCall {
			continue
		}
		at := fmt.Sprintf("%s[%d]", fExpect, i)
		if !seen[fTools] {
			bad(at, "a tool_call check needs the request's tools")
		} else if c.Name != "" && len(toolNames) > 0 && !has(c.Name) {
			bad(at+".name", safetext.Quote(c.Name, 64)+" is not a function of tools ("+strings.Join(toolNames, ", ")+")")
		}
	}
}
