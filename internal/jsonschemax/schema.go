// Package jsonschemax compiles the JSON Schemas that traces carry (a json_schema check, a
// tool's parameters, a response_format schema) with github.com/santhosh-tekuri/jsonschema/v6,
// configured so that a schema never reaches outside itself: a $ref to any other document is
// refused instead of read from disk or the network.
package jsonschemax

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Draft is the draft for schemas without "$schema": 2020-12, which OpenAI's structured
// outputs and tool parameters follow.
var Draft = jsonschema.Draft2020

// noLoader refuses every external document.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema refers to another document (%s); a trace's schema must be self-contained", url)
}

// Compile compiles one schema given as JSON text.
func Compile(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, errors.New("a schema must be an object or a boolean")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(Draft)
	c.UseLoader(noLoader{})
	const loc = "trace:///schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("invalid schema: %s", oneLine(strings.TrimPrefix(err.Error(), "jsonschema: ")))
	}
	return s, nil
}

// Validate checks JSON text against a compiled schema. The error of a JSON text that does not
// parse says so; a validation error says where the instance fails.
func Validate(s *jsonschema.Schema, instance []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(instance))
	if err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	return ValidateValue(s, v)
}

// ValidateValue checks an already decoded value (as jsonschema.UnmarshalJSON decodes it:
// numbers as json.Number).
func ValidateValue(s *jsonschema.Schema, v any) error {
	if err := s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return errors.New(flatten(ve))
		}
		return err
	}
	return nil
}

// flatten renders the first leaf cause of a validation error on one line
// ("at '/a': got string, want integer").
func flatten(ve *jsonschema.ValidationError) string {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return oneLine(ve.Error())
}

// oneLine joins the lines of a multi-line library message with "; ".
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- ")); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}
