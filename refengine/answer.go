package refengine

import (
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"

	"github.com/llmbench/llmbench/tokenizer"
)

// Answers (documented in the package doc, "Answers"): a request whose prompt poses a question
// the engine can read the answer to, or that carries tools or a response_format, gets an
// answer instead of generated words. The answer is a sequence of reference tokens (its text's
// tokenizer.Reference pieces), so the text streamed is exactly the tokens counted.

type answerKind uint8

const (
	ansText answerKind = iota + 1 // content text (a lookup's sentence)
	ansJSON                       // content text that is a JSON value (response_format)
	ansTool                       // tool calls (delta.tool_calls)
)

// answer is what the engine says to one request.
type answer struct {
	kind answerKind
	toks []string // the answer's tokens in order
	// calls are the tool calls of an ansTool answer: toks[start:nameEnd] is the function
	// name, toks[nameEnd:end] its arguments JSON.
	calls []toolSpan
	// structured answers (JSON, tool calls) end where they end: a grammar-constrained
	// decoder allows nothing but end-of-sequence after them, so ignore_eos and min_tokens
	// cannot pad them.
	structured bool
	// wrong records whether the error model changed the answer (and how), for tests.
	wrong string
}

type toolSpan struct {
	id                  string
	name                string
	start, nameEnd, end int
}

// answerInput is what an answer is read from.
type answerInput struct {
	text        string // the prompt; chat: the messages' contents, each followed by "\n"
	chat        bool
	tools       *jval // the request's tools (an array), nil without
	toolChoice  *jval // nil: auto
	format      *jval // response_format, nil without
	promptToks  int
	maxTokens   int
	temperature float64
	key         uint64 // the output seed: keys the error draws
	lead        bool   // reasoning precedes the answer: content starts with a space
}

// lookupQuestion is the question form the engine answers from the prompt.
const lookupQuestion = "What is the "

// mayAnswer reports cheaply whether a request could get an answer.
func mayAnswer(text string, hasTools, hasFormat bool) bool {
	return hasTools || hasFormat || strings.Contains(text, lookupQuestion) || strings.Contains(text, judgeMarker)
}

// buildAnswer returns the answer to in, or nil when the engine generates words as usual.
func buildAnswer(in *answerInput, m *errorModel) *answer {
	if a := judgeAnswer(in.text, in.lead); a != nil { // judge mode (judge.go)
		return a
	}
	if in.tools != nil && len(in.tools.vals) > 0 && in.chat && in.toolChoice.text() != "none" {
		if a := toolAnswer(in, m); a != nil {
			return a
		}
	}
	if in.format != nil {
		if a := jsonAnswer(in, m); a != nil {
			return a
		}
	}
	if s, ok := lookupAnswer(in, m); ok {
		return textAnswer(ansText, s, in.lead)
	}
	return nil
}

func textAnswer(kind answerKind, s string, lead bool) *answer {
	if lead {
		s = " " + s
	}
	var tok tokenizer.Reference
	return &answer{kind: kind, toks: tok.Pieces(s), structured: kind == ansJSON}
}

// lookupAnswer answers "What is the <thing>?" from a sentence "The <thing> is <value>." in the
// text before the question. With several facts about the same key ("The order number for
// customer X is …"), a failed recall answers another one's value.
func lookupAnswer(in *answerInput, m *errorModel) (string, bool) {
	text := in.text
	q := strings.LastIndex(text, lookupQuestion)
	if q < 0 {
		return "", false
	}
	end := strings.IndexByte(text[q:], '?')
	if end < 0 {
		return "", false
	}
	thing := strings.TrimSpace(text[q+len(lookupQuestion) : q+end])
	if thing == "" || len(thing) > 200 {
		return "", false
	}
	doc := text[:q]
	at := strings.Index(doc, "The "+thing+" is ")
	if at < 0 {
		return "", false
	}
	value := factValue(doc[at+len("The "+thing+" is "):])
	if value == "" {
		return "", false
	}
	d := float64(at) / float64(max(1, len(doc)))
	p := m.prob(m.recallBase(d, in.promptToks), in.temperature)
	if bad, v := m.fails(in.key, taskRecall, p); bad {
		value = wrongFact(doc, thing, value, v)
	}
	return "The " + thing + " is " + value + ".", true
}

// factValue is the value of a fact sentence: up to the sentence's end.
func factValue(s string) string {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || (s[i] == '.' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n')) {
			n = i
			break
		}
	}
	if n > 200 {
		return ""
	}
	return strings.TrimSpace(s[:n])
}

// wrongFact returns a wrong value: another fact's of the same key when the document has one
// ("The order number for customer Y is …"), else the value with one character changed.
func wrongFact(doc, thing, value string, v float64) string {
	if key, _, ok := strings.Cut(thing, " for "); ok {
		var others []string
		prefix := "The " + key + " for "
		for rest := doc; ; {
			i := strings.Index(rest, prefix)
			if i < 0 {
				break
			}
			rest = rest[i+len(prefix):]
			if _, after, ok := strings.Cut(rest[:min(len(rest), 300)], " is "); ok {
				if o := factValue(after); o != "" && o != value {
					others = append(others, o)
				}
			}
		}
		if len(others) > 0 {
			return others[int(v*float64(len(others)))%len(others)]
		}
	}
	return mangle(value, v)
}

// mangle changes the last digit of s (or appends a letter when it has none).
func mangle(s string, v float64) string {
	b := []byte(s)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] >= '0' && b[i] <= '9' {
			b[i] = '0' + (b[i]-'0'+1+byte(v*8))%10
			return string(b)
		}
	}
	return s + "x"
}

// facts are what the engine can read values from: "- label: value" lines and the JSON
// objects of tool results ("Result of NAME: {…}").
type facts struct {
	labels  map[string]string
	results map[string]*jval
}

func readFacts(text string) *facts {
	f := &facts{labels: map[string]string{}, results: map[string]*jval{}}
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "- "); ok {
			if label, value, ok := strings.Cut(rest, ": "); ok {
				f.labels[strings.ToLower(strings.TrimSpace(label))] = strings.TrimSpace(value)
			}
		}
	}
	for rest := text; ; {
		i := strings.Index(rest, "Result of ")
		if i < 0 {
			break
		}
		rest = rest[i+len("Result of "):]
		j := strings.IndexByte(rest, '{')
		if j < 0 || j > 100 {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(rest[j:]))
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			continue
		}
		if v, err := parseJSON(raw); err == nil {
			collectKeys(v, f.results, 0)
		}
	}
	return f
}

func collectKeys(v *jval, into map[string]*jval, depth int) {
	if v.kind != 'o' || depth > 8 {
		return
	}
	for i, k := range v.keys {
		into[k] = v.vals[i]
		collectKeys(v.vals[i], into, depth+1)
	}
}

// words splits a camelCase or snake_case name into lower-case words ("orderId" → "order id").
func words(name string) string {
	var b strings.Builder
	for i, r := range name {
		switch {
		case r == '_' || r == '-':
			b.WriteByte(' ')
		case unicode.IsUpper(r):
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// lookup finds the value of property name (described by desc) in the facts.
func (f *facts) lookup(name, desc string) (string, *jval) {
	if desc != "" {
		if v, ok := f.labels[strings.ToLower(strings.TrimSuffix(strings.TrimSpace(desc), "."))]; ok {
			return v, nil
		}
	}
	if v, ok := f.labels[words(name)]; ok {
		return v, nil
	}
	if v, ok := f.results[name]; ok {
		return "", v
	}
	return "", nil
}

// fill builds a value for schema s from the facts: an object's properties in schema order
// (required ones always, optional ones when a fact names them), a leaf from its fact (typed
// by the schema) or, for a required leaf without a fact, a placeholder of the right type.
func fill(s *jval, name string, f *facts, depth int) (*jval, bool) {
	typ := s.get("type").text()
	if typ == "" && s.get("properties") != nil {
		typ = "object"
	}
	if typ == "object" && depth < 16 {
		out := &jval{kind: 'o'}
		req := map[string]bool{}
		if r := s.get("required"); r != nil {
			for _, x := range r.vals {
				req[x.text()] = true
			}
		}
		found := false
		if props := s.get("properties"); props != nil && props.kind == 'o' {
			for i, k := range props.keys {
				v, ok := fill(props.vals[i], k, f, depth+1)
				if ok || req[k] {
					out.set(k, v)
				}
				found = found || ok
			}
		}
		return out, found
	}
	text, res := f.lookup(name, s.get("description").text())
	if res != nil {
		return res, true
	}
	if text == "" {
		return placeholder(s, typ), false
	}
	return typed(s, typ, text), true
}

// typed converts a fact's text to the schema's type.
func typed(s *jval, typ, text string) *jval {
	switch typ {
	case "integer", "number":
		if isJSONNumber(text) && (typ == "number" || !strings.ContainsAny(text, ".eE")) {
			return &jval{kind: 'n', str: text}
		}
	case "boolean":
		switch strings.ToLower(text) {
		case "yes", "true":
			return &jval{kind: 'b', b: true}
		case "no", "false":
			return &jval{kind: 'b'}
		}
	case "array":
		arr := &jval{kind: 'a'}
		items := s.get("items")
		for part := range strings.SplitSeq(text, ",") {
			if part = strings.TrimSpace(part); part != "" {
				arr.vals = append(arr.vals, typed(items, items.get("type").text(), part))
			}
		}
		return arr
	}
	return &jval{kind: 's', str: text}
}

// placeholder is a value of the schema's type (an enum's first member).
func placeholder(s *jval, typ string) *jval {
	if e := s.get("enum"); e != nil && len(e.vals) > 0 {
		return e.vals[0]
	}
	switch typ {
	case "integer", "number":
		return &jval{kind: 'n', str: "1"}
	case "boolean":
		return &jval{kind: 'b'}
	case "array":
		return &jval{kind: 'a'}
	case "object":
		return &jval{kind: 'o'}
	}
	return &jval{kind: 's', str: "unknown"}
}

// taskStep is where a multi-step task stands: the phrase of the step to do now and whether
// the last call failed (an "Error from …" after the last "Result of …").
func taskStep(text string) (phrase string, retry, done bool) {
	var steps []string
	for n := 1; n <= 50; n++ {
		i := strings.Index(text, "Step "+strconv.Itoa(n)+": ")
		if i < 0 {
			break
		}
		rest := text[i+len("Step "+strconv.Itoa(n)+": "):]
		steps = append(steps, rest[:sentenceEnd(rest)])
	}
	results := strings.Count(text, "Result of ")
	retry = strings.LastIndex(text, "Error from ") > strings.LastIndex(text, "Result of ")
	switch {
	case len(steps) == 0:
		return text, retry, false
	case results >= len(steps):
		return "", false, true
	}
	return steps[results], retry, false
}

func sentenceEnd(s string) int {
	for i := 0; i < len(s) && i < 500; i++ {
		if s[i] == '\n' || (s[i] == '.' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n')) {
			return i
		}
	}
	return min(len(s), 500)
}

// toolAnswer calls the tool the current step asks for, with arguments read from the facts.
func toolAnswer(in *answerInput, m *errorModel) *answer {
	tools := in.tools.vals
	phrase, retry, done := taskStep(in.text)
	choice := in.toolChoice.text()
	named := in.toolChoice.get("function").get("name").text()
	pick := -1
	switch {
	case named != "":
		for i, t := range tools {
			if t.get("function").get("name").text() == named {
				pick = i
			}
		}
	case !done:
		pick = matchTool(tools, phrase)
	}
	if pick < 0 && (choice == "required" || named != "") {
		pick = 0
	}
	if pick < 0 {
		if done {
			return textAnswer(ansText, "All steps are done.", in.lead)
		}
		return nil
	}
	f := readFacts(in.text)
	task, base := taskTool, m.q.Tool
	if retry {
		task, base = taskRetry, m.q.Retry
	}
	wrong := ""
	bad, v := m.fails(in.key, task, m.prob(base, in.temperature))
	if bad && v >= 0.75 && v < 0.9 && len(tools) > 1 && named == "" {
		pick, wrong = (pick+1)%len(tools), "wrong tool"
	}
	fn := tools[pick].get("function")
	name := fn.get("name").text()
	params := fn.get("parameters")
	args := &jval{kind: 'o'}
	if params != nil {
		args, _ = fill(params, "", f, 0)
	}
	var argText []byte
	if bad && wrong == "" {
		argText, wrong = spoil(args, params, v, taskTool)
	} else {
		argText = appendPy(nil, args)
	}
	var tok tokenizer.Reference
	a := &answer{kind: ansTool, structured: true, wrong: wrong}
	a.toks = append(a.toks, tok.Pieces(name)...)
	nameEnd := len(a.toks)
	a.toks = append(a.toks, tok.Pieces(string(argText))...)
	id := make([]byte, 16)
	x, y := tokenizer.Mix(in.key^0x7001), tokenizer.Mix(in.key^0x7002)
	for i := 0; i < 8; i++ {
		id[i], id[8+i] = byte(x>>(8*i)), byte(y>>(8*i))
	}
	a.calls = []toolSpan{{id: "chatcmpl-tool-" + hex.EncodeToString(id), name: name, start: 0, nameEnd: nameEnd, end: len(a.toks)}}
	return a
}

// matchTool picks the tool whose description (or name) the phrase contains, the longest
// such; -1 when none.
func matchTool(tools []*jval, phrase string) int {
	low := strings.ToLower(phrase)
	best, bestLen := -1, 0
	for i, t := range tools {
		fn := t.get("function")
		for _, cand := range []string{strings.TrimSuffix(strings.TrimSpace(fn.get("description").text()), "."), fn.get("name").text()} {
			c := strings.ToLower(cand)
			if len(c) > bestLen && strings.Contains(low, c) {
				best, bestLen = i, len(c)
			}
		}
	}
	return best
}

// spoil writes obj with one error chosen by v: for tool arguments a wrong parameter name
// (v < 0.3), a wrong value (< 0.55), a missing required parameter (< 0.75) or, from 0.9,
// malformed JSON; for a JSON output malformed JSON (< 0.4), a wrong type (< 0.7) or a missing
// required field.
func spoil(obj, schema *jval, v float64, task int) ([]byte, string) {
	mode := ""
	if task == taskTool {
		switch {
		case v < 0.3:
			mode = "parameter name"
		case v < 0.55:
			mode = "value"
		case v < 0.9:
			mode = "missing parameter"
		default:
			mode = "malformed"
		}
	} else {
		switch {
		case v < 0.4:
			mode = "malformed"
		case v < 0.7:
			mode = "type"
		default:
			mode = "missing parameter"
		}
	}
	obj = clone(obj)
	switch mode {
	case "parameter name":
		if !renameKey(obj) {
			mode = "value"
			mangleLeaf(obj, v)
		}
	case "value":
		mangleLeaf(obj, v)
	case "type":
		retype(obj)
	case "missing parameter":
		dropRequired(obj, schema)
	}
	b := appendPy(nil, obj)
	if mode == "malformed" && len(b) > 1 {
		b = b[:len(b)-1]
	}
	return b, mode
}

func clone(v *jval) *jval {
	c := *v
	c.keys = append([]string(nil), v.keys...)
	c.vals = make([]*jval, len(v.vals))
	for i, x := range v.vals {
		c.vals[i] = clone(x)
	}
	return &c
}

// renameKey renames the first key that has another spelling (camelCase ↔ snake_case).
func renameKey(obj *jval) bool {
	for i, k := range obj.keys {
		var alt string
		if strings.Contains(k, "_") {
			parts := strings.Split(k, "_")
			for j := 1; j < len(parts); j++ {
				if parts[j] != "" {
					parts[j] = strings.ToUpper(parts[j][:1]) + parts[j][1:]
				}
			}
			alt = strings.Join(parts, "")
		} else if w := words(k); strings.Contains(w, " ") {
			alt = strings.ReplaceAll(w, " ", "_")
		}
		if alt != "" && alt != k && obj.get(alt) == nil {
			obj.keys[i] = alt
			return true
		}
		if obj.vals[i].kind == 'o' && renameKey(obj.vals[i]) {
			return true
		}
	}
	return false
}

// mangleLeaf changes the first string or number leaf.
func mangleLeaf(v *jval, u float64) bool {
	switch v.kind {
	case 's', 'n':
		v.str = mangle(v.str, u)
		return true
	case 'b':
		v.b = !v.b
		return true
	}
	for _, x := range v.vals {
		if mangleLeaf(x, u) {
			return true
		}
	}
	return false
}

// retype gives the first leaf the wrong JSON type.
func retype(v *jval) bool {
	switch v.kind {
	case 'n':
		v.kind = 's'
		return true
	case 'b':
		v.kind, v.str = 's', strconv.FormatBool(v.b)
		return true
	case 's':
		v.kind, v.str = 'n', "0"
		return true
	}
	for _, x := range v.vals {
		if retype(x) {
			return true
		}
	}
	return false
}

// dropRequired removes the first required top-level member (or the first member).
func dropRequired(obj, schema *jval) {
	if obj.kind != 'o' || len(obj.keys) == 0 {
		return
	}
	if r := schema.get("required"); r != nil {
		for _, x := range r.vals {
			if obj.get(x.text()) != nil {
				obj.del(x.text())
				return
			}
		}
	}
	obj.del(obj.keys[0])
}

// jsonAnswer is a response_format answer: an object filled from the schema (json_schema), or
// from the prompt's "- label: value" lines (json_object), or, for json_object without any,
// {"text": "<words>"} sized to max_tokens so that the output stays valid JSON.
func jsonAnswer(in *answerInput, m *errorModel) *answer {
	typ := in.format.get("type").text()
	f := readFacts(in.text)
	var obj, schema *jval
	switch typ {
	case "json_schema":
		schema = in.format.get("json_schema").get("schema")
		obj, _ = fill(schema, "", f, 0)
	case "json_object":
		if len(f.labels) == 0 {
			n := max(1, in.maxTokens-8)
			b := []byte(`{"text": "`)
			b = appendOutput(b, in.key, 0, n)
			return textAnswer(ansJSON, string(append(b, `"}`...)), in.lead)
		}
		obj = &jval{kind: 'o'}
		for _, line := range strings.Split(in.text, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
				if label, value, ok := strings.Cut(rest, ": "); ok {
					obj.set(camel(label), typedGuess(strings.TrimSpace(value)))
				}
			}
		}
	default:
		return nil
	}
	var text []byte
	wrong := ""
	if bad, v := m.fails(in.key, taskJSON, m.prob(m.q.JSON, in.temperature)); bad {
		text, wrong = spoil(obj, schema, v, taskJSON)
	} else {
		text = appendPy(nil, obj)
	}
	a := textAnswer(ansJSON, string(text), in.lead)
	a.wrong = wrong
	return a
}

func camel(label string) string {
	parts := strings.Fields(strings.ToLower(label))
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

func typedGuess(s string) *jval {
	if isJSONNumber(s) {
		return &jval{kind: 'n', str: s}
	}
	return &jval{kind: 's', str: s}
}

// isJSONNumber reports whether s is a number in JSON's grammar ("0042", "+1" and "Inf" are
// not).
func isJSONNumber(s string) bool {
	return s != "" && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) && len(s) <= 64 && json.Valid([]byte(s))
}

// errorModelOff is the model of an engine without Quality: every answer right.
var errorModelOff = &errorModel{q: Quality{}, dtype: 1}

// appendTokens appends toks[a:b].
func appendTokens(b []byte, toks []string, a, c int) []byte {
	for _, t := range toks[a:c] {
		b = append(b, t...)
	}
	return b
}
