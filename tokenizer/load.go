package tokenizer

// # Choosing a tokenizer
//
// Load turns the CLI's --tokenizer value into a Tokenizer:
//
//   - "reference": Reference, exact for the reference engine;
//   - "approx": Approx, the documented estimate used when nothing better is known;
//   - anything else: a path to a Hugging Face tokenizer.json, read by LoadHF ("hf:PATH" is
//     accepted too, the form Name reports).
//
// HF reads byte-level BPE files (GPT-2, Llama 3, Qwen2/3 style) and SentencePiece-style BPE
// files (Llama 2, Mistral style) without network access; its type documentation lists the
// fields, normalizers, pre-tokenizers and regex syntax it supports. Files it cannot reproduce
// exactly (other model types, unknown components, unsupported regex constructs) are refused
// at load time with an error that names the field. HF.Decode maps ids back to text, which
// prompt synthesis can use to fit a text to an exact token count.
//
// Counting a stream: use CountChunk on each chunk of generated text. Count treats its text as
// a whole input, and SentencePiece-style files prefix every input with "▁", which would add
// a token to nearly every chunk; CountChunk counts the chunk as the continuation it is.

import (
	"errors"
	"strings"
	"unsafe"
)

// Load returns the tokenizer named by spec: "reference", "approx", or the path of a Hugging
// Face tokenizer.json (optionally written "hf:PATH"; write "./reference" for a file that is
// named like a built-in tokenizer).
func Load(spec string) (Tokenizer, error) {
	switch spec {
	case "reference":
		return Reference{}, nil
	case "approx":
		return Approx{}, nil
	case "", "hf:":
		return nil, errors.New(`tokenizer: empty name: use "reference", "approx" or the path of a tokenizer.json`)
	}
	return LoadHF(strings.TrimPrefix(spec, "hf:"))
}

// CountChunk counts the tokens of a streamed chunk of generated text. Tokenizers that add a
// prefix at the start of an input (SentencePiece-style HF files) count the chunk as the
// continuation it is, via CountContinuation; the others use Count. Summing CountChunk over a
// stream's chunks gives the stream's token count when the server cuts chunks at token
// boundaries.
func CountChunk(t Tokenizer, chunk string) int {
	if c, ok := t.(interface{ CountContinuation(string) int }); ok {
		return c.CountContinuation(chunk)
	}
	return t.Count(chunk)
}

// CountChunkBytes is CountChunk of a chunk held in a buffer the caller will reuse (a stream
// reader's). The package's own tokenizers (HF, Reference, Approx) keep no text they are given,
// so they count a view of b without copying it; any other Tokenizer gets a copy, since it
// might keep the string (a cache key that changed under a map is what issue 31 crashed on).
func CountChunkBytes(t Tokenizer, b []byte) int {
	if len(b) == 0 {
		return CountChunk(t, "")
	}
	switch t.(type) {
	case *HF, Reference, *Reference, Approx, *Approx:
		return CountChunk(t, unsafe.String(&b[0], len(b)))
	}
	return CountChunk(t, string(b))
}
