package refengine

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// jval is a JSON value that keeps the order of object keys (a tool's parameters are filled,
// and their arguments written, in the order the schema lists them). Only the engine's own
// answer code reads it; request bodies are bounded by Config.MaxBodyBytes.
type jval struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys []string
	vals []*jval
	str  string // string, or number text
	b    bool
}

// get returns the member k of an object (nil if absent or not an object).
func (v *jval) get(k string) *jval {
	if v == nil || v.kind != 'o' {
		return nil
	}
	for i, key := range v.keys {
		if key == k {
			return v.vals[i]
		}
	}
	return nil
}

// text returns a string member's value ("" otherwise).
func (v *jval) text() string {
	if v == nil || v.kind != 's' {
		return ""
	}
	return v.str
}

func (v *jval) set(k string, x *jval) {
	for i, key := range v.keys {
		if key == k {
			v.vals[i] = x
			return
		}
	}
	v.keys = append(v.keys, k)
	v.vals = append(v.vals, x)
}

func (v *jval) del(k string) {
	for i, key := range v.keys {
		if key == k {
			v.keys = append(v.keys[:i:i], v.keys[i+1:]...)
			v.vals = append(v.vals[:i:i], v.vals[i+1:]...)
			return
		}
	}
}

// maxJSONDepth bounds nesting, so a hostile schema cannot exhaust the stack.
const maxJSONDepth = 64

// parseJSON parses one JSON value keeping key order.
func parseJSON(data []byte) (*jval, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readJSON(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func readJSON(dec *json.Decoder, depth int) (*jval, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("JSON nested too deeply")
	}
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch x := t.(type) {
	case json.Delim:
		switch x {
		case '{':
			v := &jval{kind: 'o'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				m, err := readJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.set(k, m)
			}
			_, err := dec.Token()
			return v, err
		case '[':
			v := &jval{kind: 'a'}
			for dec.More() {
				m, err := readJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.vals = append(v.vals, m)
			}
			_, err := dec.Token()
			return v, err
		}
		return nil, errors.New("unexpected delimiter")
	case string:
		return &jval{kind: 's', str: x}, nil
	case json.Number:
		return &jval{kind: 'n', str: x.String()}, nil
	case bool:
		return &jval{kind: 'b', b: x}, nil
	case nil:
		return &jval{kind: 'z'}, nil
	}
	return nil, errors.New("unexpected JSON token")
}

// appendPy appends v as Python's json.dumps writes it (", " and ": " separators, non-ASCII
// kept), which is how vLLM's tool parsers serialize arguments.
func appendPy(b []byte, v *jval) []byte {
	switch v.kind {
	case 'o':
		b = append(b, '{')
		for i, k := range v.keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendJSONText(b, k)
			b = append(b, ": "...)
			b = appendPy(b, v.vals[i])
		}
		return append(b, '}')
	case 'a':
		b = append(b, '[')
		for i, x := range v.vals {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendPy(b, x)
		}
		return append(b, ']')
	case 's':
		return appendJSONText(b, v.str)
	case 'n':
		return append(b, v.str...)
	case 'b':
		return strconv.AppendBool(b, v.b)
	}
	return append(b, "null"...)
}

// appendJSONText appends s as a JSON string without HTML escaping (as Python's json.dumps).
func appendJSONText(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return append(b, bytes.TrimRight(buf.Bytes(), "\n")...)
}
