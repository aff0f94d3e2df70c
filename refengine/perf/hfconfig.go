package perf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// hfConfig holds the fields of a Hugging Face config.json that decide serving cost. Other
// fields (rope scaling, dropout, token ids, ...) are ignored.
type hfConfig struct {
	ModelType         string `json:"model_type"`
	Layers            int    `json:"num_hidden_layers"`
	Hidden            int    `json:"hidden_size"`
	Heads             int    `json:"num_attention_heads"`
	KVHeads           *int   `json:"num_key_value_heads"`
	HeadDim           *int   `json:"head_dim"`
	FFN               int    `json:"intermediate_size"`
	Vocab             int    `json:"vocab_size"`
	MaxPos            int    `json:"max_position_embeddings"`
	TieWordEmbeddings bool   `json:"tie_word_embeddings"`
	Experts           int    `json:"num_local_experts"`
	ExpertsPerToken   int    `json:"num_experts_per_tok"`
}

// ParseHFConfig builds a Model from a Hugging Face config.json (Llama-style decoders: Llama,
// Mistral, Mixtral, Qwen2 and the like), named name. Missing num_key_value_heads means
// multi-head attention and missing head_dim means hidden_size / num_attention_heads. The
// parameter counts, which config.json does not state, are computed from the shapes: the
// embeddings (and a separate LM head unless tie_word_embeddings), per layer the attention
// projections (query and output hidden × heads × head_dim each, key and value hidden × KV
// heads × head_dim each), a gated MLP of 3 × hidden × intermediate_size per expert, the
// router for MoE, and the norms; biases are left out. For Llama 3.1 8B this gives 8.03e9. path
// prefixes every error, which names the field.
func ParseHFConfig(data []byte, path, name string) (Model, error) {
	var c hfConfig
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&c); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(data, se.Offset)
			return Model{}, fmt.Errorf("%s:%d:%d: invalid config.json: %w", path, line, col, err)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			line, col := lineCol(data, te.Offset)
			return Model{}, fmt.Errorf("%s:%d:%d: field %q must be %s, not %s", path, line, col, te.Field, jsonKind(te.Type), te.Value)
		}
		return Model{}, fmt.Errorf("%s: invalid config.json: %w", path, err)
	}
	for _, f := range []struct {
		field string
		v     int
	}{{"num_hidden_layers", c.Layers}, {"hidden_size", c.Hidden}, {"num_attention_heads", c.Heads},
		{"intermediate_size", c.FFN}, {"vocab_size", c.Vocab}, {"max_position_embeddings", c.MaxPos}} {
		if f.v <= 0 || f.v > 1<<24 {
			return Model{}, fmt.Errorf("%s: field %q must be a positive integer up to %d, got %d (is this a decoder model's config.json?)", path, f.field, 1<<24, f.v)
		}
	}
	m := Model{Name: name, Layers: c.Layers, Hidden: c.Hidden, Heads: c.Heads, KVHeads: c.Heads,
		HeadDim: c.Hidden / c.Heads, FFN: c.FFN, Vocab: c.Vocab, MaxContext: c.MaxPos}
	if c.KVHeads != nil {
		m.KVHeads = *c.KVHeads
	}
	if c.HeadDim != nil {
		m.HeadDim = *c.HeadDim
	}
	if m.KVHeads <= 0 || m.KVHeads > m.Heads || m.HeadDim <= 0 || m.HeadDim > 1<<16 {
		return Model{}, fmt.Errorf("%s: fields \"num_key_value_heads\" (%d) and \"head_dim\" (%d) must be in [1, num_attention_heads] and [1, 65536]", path, m.KVHeads, m.HeadDim)
	}
	if c.Experts < 0 || c.ExpertsPerToken < 0 || (c.Experts > 0 && (c.ExpertsPerToken < 1 || c.ExpertsPerToken > c.Experts)) || c.Experts > 1<<16 {
		return Model{}, fmt.Errorf("%s: fields \"num_local_experts\" (%d) and \"num_experts_per_tok\" (%d): need 1 <= num_experts_per_tok <= num_local_experts for a mixture of experts", path, c.Experts, c.ExpertsPerToken)
	}
	h, l := float64(m.Hidden), float64(m.Layers)
	attn := 2*h*float64(m.Heads*m.HeadDim) + 2*h*float64(m.KVHeads*m.HeadDim)
	expert := 3 * h * float64(m.FFN)
	embed := float64(m.Vocab) * h
	if !c.TieWordEmbeddings {
		embed *= 2
	}
	shared := embed + l*(attn+2*h) + h
	experts, active := 1.0, 1.0
	if c.Experts > 0 {
		m.Experts, m.ActiveExperts = c.Experts, c.ExpertsPerToken
		experts, active = float64(c.Experts), float64(c.ExpertsPerToken)
		shared += l * h * experts // router
	}
	m.Params = shared + l*experts*expert
	m.ActiveParams = shared + l*active*expert
	if math.IsInf(m.Params, 0) {
		return Model{}, fmt.Errorf("%s: the shapes give no finite parameter count", path)
	}
	if err := m.Validate(); err != nil {
		return Model{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}
