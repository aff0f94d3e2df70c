package quality

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/llmbench/llmbench/internal/jsonschemax"
	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// Output is what a check looks at: the answer text, the tool calls and the output token count
// of one response.
type Output struct {
	Text         string
	ToolCalls    []metrics.ToolCall
	OutputTokens int
}

// OutputOf reads a record's output.
func OutputOf(r *metrics.Record) Output {
	return Output{Text: r.OutputText, ToolCalls: r.ToolCalls, OutputTokens: r.OutputTokens}
}

// Result is the outcome of one check: Reason is "" when it passed, else a failure grade
// (metrics.GradeFormat, GradeTool or GradeCheck); Note says why, in a few words.
type Result struct {
	Reason string
	Note   string
}

// OK reports whether the check passed.
func (r Result) OK() bool { return r.Reason == "" }

func fail(reason, format string, args ...any) Result {
	return Result{Reason: reason, Note: fmt.Sprintf(format, args...)}
}

// check is one compiled expectation.
type check struct {
	kind      string
	text      string   // exact
	values    []string // contains, not_contains
	any       bool     // contains mode "any"
	re        *regexp.Regexp
	schema    *jsonschema.Schema
	number    float64
	tolerance float64
	maxTokens int
	name      string         // tool_call
	args      map[string]any // tool_call: expected key/values
}

// tool is one function of a request's tools.
type tool struct {
	schema *jsonschema.Schema // nil: no parameters schema, any object
	params any                // the parameters schema, decoded, for the extra-field walk
}

// compiled are the checks of one request and the tools they refer to.
type compiled struct {
	checks []check
	tools  map[string]*tool
}

// schemaCache compiles each distinct schema text once (many requests share their tools).
type schemaCache map[string]*jsonschema.Schema

func (c schemaCache) get(raw []byte) (*jsonschema.Schema, error) {
	if s, ok := c[string(raw)]; ok {
		return s, nil
	}
	s, err := jsonschemax.Compile(raw)
	if err != nil {
		return nil, err
	}
	c[string(raw)] = s
	return s, nil
}

// compile prepares a request's checks. The trace reader has validated them; an error here
// means a Request built in code.
func compile(q *traces.Request, cache schemaCache) (*compiled, error) {
	c := &compiled{}
	for i, e := range q.Expect {
		ck := check{kind: e.Kind, values: e.Values, any: e.Mode == "any", tolerance: e.Tolerance, name: e.Name}
		var err error
		switch e.Kind {
		case traces.CheckExact:
			err = json.Unmarshal(e.Value, &ck.text)
		case traces.CheckRegex:
			ck.re, err = regexp.Compile(e.Pattern)
		case traces.CheckJSONSchema:
			ck.schema, err = cache.get(e.Schema)
		case traces.CheckNumber:
			err = json.Unmarshal(e.Value, &ck.number)
		case traces.CheckMaxTokensUsed:
			err = json.Unmarshal(e.Value, &ck.maxTokens)
		case traces.CheckToolCall:
			if len(e.Arguments) > 0 {
				err = json.Unmarshal(e.Arguments, &ck.args)
			}
		case traces.CheckContains, traces.CheckNotContains, traces.CheckJSON:
		default:
			err = fmt.Errorf("unknown check kind %q", e.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("request %s: expect[%d] (%s): %w", q.ID, i, e.Kind, err)
		}
		c.checks = append(c.checks, ck)
	}
	for _, t := range q.ToolList() {
		tl := &tool{}
		if len(t.Parameters) > 0 {
			s, err := cache.get(t.Parameters)
			if err != nil {
				return nil, fmt.Errorf("request %s: tool %s: %w", q.ID, t.Name, err)
			}
			tl.schema = s
			json.Unmarshal(t.Parameters, &tl.params)
		}
		if c.tools == nil {
			c.tools = map[string]*tool{}
		}
		c.tools[t.Name] = tl
	}
	return c, nil
}

// run applies the check to out; tools are the request's functions.
func (ck *check) run(out Output, tools map[string]*tool) Result {
	switch ck.kind {
	case traces.CheckExact:
		if got := strings.TrimSpace(out.Text); got != ck.text {
			return fail(metrics.GradeCheck, "output %s is not %s", quote(got), quote(ck.text))
		}
	case traces.CheckContains:
		missing := 0
		var first string
		for _, v := range ck.values {
			if !strings.Contains(out.Text, v) {
				if missing == 0 {
					first = v
				}
				missing++
			} else if ck.any {
				return Result{}
			}
		}
		if ck.any && len(ck.values) > 0 {
			return fail(metrics.GradeCheck, "none of %d values occurs in the output", len(ck.values))
		}
		if missing > 0 {
			return fail(metrics.GradeCheck, "%s does not occur in the output", quote(first))
		}
	case traces.CheckNotContains:
		for _, v := range ck.values {
			if strings.Contains(out.Text, v) {
				return fail(metrics.GradeCheck, "%s occurs in the output", quote(v))
			}
		}
	case traces.CheckRegex:
		if !ck.re.MatchString(out.Text) {
			return fail(metrics.GradeCheck, "pattern %s does not match", quote(ck.re.String()))
		}
	case traces.CheckJSON:
		if _, err := parseJSON(out.Text); err != nil {
			return fail(metrics.GradeFormat, "output is not JSON: %v", err)
		}
	case traces.CheckJSONSchema:
		v, err := parseJSON(out.Text)
		if err != nil {
			return fail(metrics.GradeFormat, "output is not JSON: %v", err)
		}
		if err := jsonschemax.ValidateValue(ck.schema, v); err != nil {
			return fail(metrics.GradeCheck, "schema: %v", err)
		}
	case traces.CheckNumber:
		got, ok := firstNumber(out.Text)
		if !ok {
			return fail(metrics.GradeCheck, "no number in the output")
		}
		if math.Abs(got-ck.number) > ck.tolerance {
			return fail(metrics.GradeCheck, "first number %v is not %v ± %v", got, ck.number, ck.tolerance)
		}
	case traces.CheckMaxTokensUsed:
		if out.OutputTokens > ck.maxTokens {
			return fail(metrics.GradeCheck, "%d output tokens, at most %d allowed", out.OutputTokens, ck.maxTokens)
		}
	case traces.CheckToolCall:
		return ck.toolCall(out, tools)
	}
	return Result{}
}

func (ck *check) toolCall(out Output, tools map[string]*tool) Result {
	if len(out.ToolCalls) == 0 {
		return fail(metrics.GradeTool, "no tool call")
	}
	call := &out.ToolCalls[0]
	if ck.name != "" {
		call = nil
		for i := range out.ToolCalls {
			if out.ToolCalls[i].Name == ck.name {
				call = &out.ToolCalls[i]
				break
			}
		}
		if call == nil {
			return fail(metrics.GradeTool, "called %s, want %s", quote(out.ToolCalls[0].Name), quote(ck.name))
		}
	}
	tl, ok := tools[call.Name]
	if !ok {
		return fail(metrics.GradeTool, "%s is not a function of the request's tools", quote(call.Name))
	}
	dec := json.NewDecoder(strings.NewReader(call.Arguments))
	dec.UseNumber()
	var args any
	if err := dec.Decode(&args); err != nil || dec.More() {
		return fail(metrics.GradeTool, "arguments of %s do not parse as JSON", quote(call.Name))
	}
	obj, isObj := args.(map[string]any)
	if !isObj {
		return fail(metrics.GradeTool, "arguments of %s are not a JSON object", quote(call.Name))
	}
	if tl.schema != nil {
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(call.Arguments))
		if err := jsonschemax.ValidateValue(tl.schema, v); err != nil {
			return fail(metrics.GradeTool, "arguments of %s: %v", quote(call.Name), err)
		}
		if extra := extraField(tl.params, args, ""); extra != "" {
			return fail(metrics.GradeTool, "arguments of %s have a field the schema does not declare: %s", quote(call.Name), extra)
		}
	}
	keys := make([]string, 0, len(ck.args))
	for k := range ck.args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		got, ok := obj[k]
		if !ok {
			return fail(metrics.GradeTool, "argument %s missing", quote(k))
		}
		if !jsonEqual(got, ck.args[k]) {
			return fail(metrics.GradeTool, "argument %s is %s, want %s", quote(k), jsonText(got), jsonText(ck.args[k]))
		}
	}
	return Result{}
}

// extraField walks a decoded value along its schema and returns the path of the first object
// property that the schema's "properties" do not declare (where the schema declares
// properties and does not allow others explicitly), or "".
func extraField(schema, v any, at string) string {
	s, ok := schema.(map[string]any)
	if !ok {
		return ""
	}
	switch x := v.(type) {
	case map[string]any:
		props, hasProps := s["properties"].(map[string]any)
		addl, hasAddl := s["additionalProperties"]
		open := hasAddl && addl != false
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub, declared := props[k]
			if !declared {
				if hasProps && !open {
					return at + "/" + k
				}
				continue
			}
			if p := extraField(sub, x[k], at+"/"+k); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := extraField(s["items"], e, at+"/"+strconv.Itoa(i)); p != "" {
				return p
			}
		}
	}
	return ""
}

// parseJSON parses an output as JSON: trimmed of white space, with one surrounding fenced code
// block (```json ... ``` or ``` ... ```) unwrapped. Numbers decode as json.Number, as the
// schema validator expects.
func parseJSON(text string) (any, error) {
	s := strings.TrimSpace(text)
	if strings.HasPrefix(s, "```") && strings.HasSuffix(s, "```") && len(s) >= 6 {
		inner := s[3 : len(s)-3]
		if nl := strings.IndexByte(inner, '\n'); nl >= 0 && !strings.ContainsAny(inner[:nl], "{[\"") {
			inner = inner[nl+1:] // the info string (json)
		}
		s = strings.TrimSpace(inner)
	}
	if s == "" {
		return nil, fmt.Errorf("empty")
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		return nil, err
	}
	return v, nil
}

// numberRE finds the first number of an output: an optional sign, digits with optional
// thousands separators (1,234) and decimals, or a leading-dot decimal, and an exponent.
var numberRE = regexp.MustCompile(`[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?`)

func firstNumber(text string) (float64, bool) {
	m := numberRE.FindString(text)
	if m == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(m, ",", ""), 64)
	return f, err == nil
}

// jsonEqual compares two decoded JSON values by their canonical encoding (numbers by value).
func jsonEqual(a, b any) bool {
	return reflect.DeepEqual(canon(a), canon(b))
}

func canon(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return string(x)
		}
		return f
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = canon(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = canon(e)
		}
		return s
	}
	return v
}

func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return safetext.Clip(strings.TrimSpace(b.String()), 60)
}

func quote(s string) string { return safetext.Quote(s, 60) }
