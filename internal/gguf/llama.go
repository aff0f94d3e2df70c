package gguf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// Llama describes a tiny Llama model: its shape and the seed of its weights. Zero values are
// not defaults; start from TinyLlama.
type Llama struct {
	Layers  int // transformer blocks (llama.block_count)
	Embed   int // hidden size (llama.embedding_length), a multiple of Heads
	FFN     int // feed-forward size (llama.feed_forward_length)
	Heads   int // attention heads
	KVHeads int // key/value heads, a divisor of Heads
	Context int // trained context length the file declares (llama.context_length)
	Seed    uint64
}

// TinyLlama is a 2-block model of 64 dimensions, about 140k parameters (0.6 MB): on a CPU a
// server answers with it in milliseconds.
func TinyLlama() Llama {
	return Llama{Layers: 2, Embed: 64, FFN: 128, Heads: 4, KVHeads: 2, Context: 4096, Seed: 1}
}

// Token ids of the vocabulary's special tokens (SentencePiece's Llama layout).
const (
	UnkID = 0
	BOSID = 1
	EOSID = 2
)

// Token types of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
const (
	tokNormal  int32 = 1
	tokUnknown int32 = 2
	tokControl int32 = 3
	tokByte    int32 = 6
)

// spaceMark is SentencePiece's word-boundary mark (U+2581), which stands for a space in pieces.
const spaceMark = "\u2581"

// Vocabulary returns the tokens, scores and token types of the model's SentencePiece ("llama")
// vocabulary: <unk>, <s>, </s>; the 256 byte tokens <0x00>..<0xFF> that any text falls back
// to; then ordinary pieces: consonant+vowel syllables, the letters after a word boundary, the
// letters, the boundary alone and ".". Earlier ordinary pieces have higher scores, so the
// tokenizer's merges prefer syllables; llmbench's synthetic words cost two to four tokens each.
func Vocabulary() (tokens []string, scores []float32, types []int32) {
	add := func(tok string, score float32, typ int32) {
		tokens, scores, types = append(tokens, tok), append(scores, score), append(types, typ)
	}
	add("<unk>", 0, tokUnknown)
	add("<s>", 0, tokControl)
	add("</s>", 0, tokControl)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), 0, tokByte)
	}
	var pieces []string
	for _, c := range "bcdfghjklmnpqrstvwxz" {
		for _, v := range "aeiouy" {
			pieces = append(pieces, string(c)+string(v))
		}
	}
	for c := 'a'; c <= 'z'; c++ {
		pieces = append(pieces, spaceMark+string(c))
	}
	for c := 'a'; c <= 'z'; c++ {
		pieces = append(pieces, string(c))
	}
	pieces = append(pieces, spaceMark, ".")
	for i, p := range pieces {
		add(p, -float32(i), tokNormal)
	}
	return tokens, scores, types
}

// File builds the model's GGUF content: llama.cpp's metadata keys for the "llama"
// architecture and tokenizer, and F32 weights drawn from the seed.
//
// The output matrix is arranged so that generation never ends by itself: the rows of the
// special and byte tokens are zero (their logits are 0), and the ordinary tokens come in pairs
// whose rows are v and -v, so for any nonzero hidden state one of each pair has a positive
// logit. The greedy choice is therefore always an ordinary piece, and with more than 80
// ordinary tokens every top-40 sample is too: a request's max_tokens governs its length.
func (m Llama) File() (*File, error) {
	if m.Layers <= 0 || m.Embed <= 0 || m.FFN <= 0 || m.Heads <= 0 || m.KVHeads <= 0 || m.Context <= 0 ||
		m.Embed%m.Heads != 0 || m.Heads%m.KVHeads != 0 {
		return nil, fmt.Errorf("gguf: bad Llama shape %+v (every size > 0, Embed a multiple of Heads, Heads of KVHeads)", m)
	}
	tokens, scores, types := Vocabulary()
	vocab, headDim := len(tokens), m.Embed/m.Heads
	f := &File{KV: []KV{
		{"general.architecture", "llama"},
		{"general.name", "llmbench-tiny"},
		{"general.file_type", uint32(0)}, // all F32
		{"general.alignment", uint32(Alignment)},
		{"llama.context_length", uint32(m.Context)},
		{"llama.embedding_length", uint32(m.Embed)},
		{"llama.block_count", uint32(m.Layers)},
		{"llama.feed_forward_length", uint32(m.FFN)},
		{"llama.attention.head_count", uint32(m.Heads)},
		{"llama.attention.head_count_kv", uint32(m.KVHeads)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"llama.rope.dimension_count", uint32(headDim)},
		{"llama.rope.freq_base", float32(10000)},
		{"llama.vocab_size", uint32(vocab)},
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.unknown_token_id", uint32(UnkID)},
		{"tokenizer.ggml.bos_token_id", uint32(BOSID)},
		{"tokenizer.ggml.eos_token_id", uint32(EOSID)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
	}}
	rng := rand.New(rand.NewPCG(m.Seed, 0x6767756620746e79))
	uniform := func(n int, scale float64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32((2*rng.Float64() - 1) * scale)
		}
		return out
	}
	ones := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	matrix := func(name string, in, out int) Tensor {
		return Tensor{Name: name, Dims: []uint64{uint64(in), uint64(out)}, Data: uniform(in*out, 1/math.Sqrt(float64(in)))}
	}
	f.Tensors = append(f.Tensors,
		Tensor{Name: "token_embd.weight", Dims: []uint64{uint64(m.Embed), uint64(vocab)}, Data: uniform(m.Embed*vocab, 1)},
		Tensor{Name: "output_norm.weight", Dims: []uint64{uint64(m.Embed)}, Data: ones(m.Embed)},
		Tensor{Name: "output.weight", Dims: []uint64{uint64(m.Embed), uint64(vocab)}, Data: outputRows(types, m.Embed, rng)})
	for l := 0; l < m.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		f.Tensors = append(f.Tensors,
			Tensor{Name: p + "attn_norm.weight", Dims: []uint64{uint64(m.Embed)}, Data: ones(m.Embed)},
			matrix(p+"attn_q.weight", m.Embed, m.Heads*headDim),
			matrix(p+"attn_k.weight", m.Embed, m.KVHeads*headDim),
			matrix(p+"attn_v.weight", m.Embed, m.KVHeads*headDim),
			matrix(p+"attn_output.weight", m.Heads*headDim, m.Embed),
			Tensor{Name: p + "ffn_norm.weight", Dims: []uint64{uint64(m.Embed)}, Data: ones(m.Embed)},
			matrix(p+"ffn_gate.weight", m.Embed, m.FFN),
			matrix(p+"ffn_up.weight", m.Embed, m.FFN),
			matrix(p+"ffn_down.weight", m.FFN, m.Embed))
	}
	return f, nil
}

// outputRows is the output matrix (one row of dim values per token): zero for every token
// that is not ordinary, and v, -v for consecutive pairs of ordinary tokens (an unpaired last
// one stays zero).
func outputRows(types []int32, dim int, rng *rand.Rand) []float32 {
	out := make([]float32, len(types)*dim)
	var prev []float32
	for id, typ := range types {
		if typ != tokNormal {
			continue
		}
		row := out[id*dim : (id+1)*dim]
		if prev == nil {
			if id+1 >= len(types) || types[id+1] != tokNormal {
				continue
			}
			for i := range row {
				row[i] = float32(2*rng.Float64() - 1)
			}
			prev = row
			continue
		}
		for i := range row {
			row[i] = -prev[i]
		}
		prev = nil
	}
	return out
}

// WriteFile writes the model to path (its directory must exist).
func (m Llama) WriteFile(path string) error {
	f, err := m.File()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".gguf-*")
	if err != nil {
		return err
	}
	if err := f.Write(tmp); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
