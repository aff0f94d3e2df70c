package tokenizer

import (
	"strings"
	"sync"
)

// HF is a BPE tokenizer read from a Hugging Face tokenizer.json file, in pure Go and without
// network access. It covers the two BPE families served by LLM engines:
//
//   - byte-level BPE (GPT-2, Llama 3, Qwen2/Qwen3, DeepSeek V3, cl100k, o200k, gpt-oss and
//     similar): a ByteLevel pre-tokenizer maps every byte to a printable rune, usually after
//     one or more Split pre-tokenizers with the model's regex;
//   - SentencePiece-style BPE (Llama 2, Mistral 7B, Gemma 3 and similar): spaces become "▁"
//     through a Replace/Prepend normalizer or a Metaspace pre-tokenizer, and runes missing
//     from the vocabulary fall back to <0xNN> byte tokens.
//
// Count and Encode tokenize a text as a whole input. Streamed chunks are not whole inputs:
// count them with CountContinuation (or the package's CountChunk), which leaves out the "▁"
// or space a SentencePiece-style file prefixes to every input.
//
// What is read: model (type "BPE": vocab, merges as "a b" strings or [a, b] pairs, unk_token,
// fuse_unk, byte_fallback, ignore_merges), added_tokens (content, id, lstrip, rstrip,
// single_word), normalizer (Sequence, Prepend, Replace with a String or Regex pattern, NFC,
// NFD, NFKC, NFKD, Lowercase, Strip), pre_tokenizer (Sequence, Split with a String or Regex
// pattern and any behavior/invert, ByteLevel with add_prefix_space and use_regex, Metaspace
// with replacement, prepend_scheme and split, Digits, Whitespace, WhitespaceSplit) and, only
// for TemplateTokens, post_processor. The decoder section is ignored: Decode inverts the
// steps above by itself. Any other model, normalizer or pre-tokenizer type is refused with an
// error naming it, so a count is never silently wrong.
//
// Split patterns run on the package's own backtracking matcher (Go's regexp lacks the
// lookahead `\s+(?!\S)` that GPT-2, cl100k/Llama 3, o200k and Qwen2 patterns use). It
// accepts literals, classes with \p{..} categories and scripts, \s \d \w and their negations,
// groups, (?i:...) flags, lookahead (?=...) (?!...), alternation and greedy or lazy
// quantifiers including {n,m}; anchors, backreferences, lookbehind and possessive quantifiers
// are refused when the file is loaded.
//
// Differences from the Hugging Face library, none of which affects ordinary text: added
// tokens are matched on the raw text even when marked "normalized"; Count and Encode never
// add the post-processor's special tokens (see TemplateTokens); BPE dropout is ignored; a
// rune that is neither in the vocabulary nor covered by byte fallback or an unk token is
// dropped; Decode aims at exact round trips rather than at reproducing the file's decoder
// (it also removes the "▁" prefix that follows a special token). Encode recognizes added and
// special tokens written in the text, as the library does by default.
//
// TestHFGolden compares Encode with the Hugging Face library itself: on the tokenizer.json
// files of Llama 2, Llama 3, Qwen3, Gemma 3, DeepSeek V3, cl100k, o200k and gpt-oss, the ids
// of 3008 texts each (English prose and random mixes of scripts, digits, whitespace, emoji
// and special tokens) were identical.
//
// An HF is immutable after loading apart from an internal word cache (bounded, see
// wordCache), and safe for concurrent use. It keeps no string a caller passes in: the
// cache stores copies, so a caller may pass a view of a buffer it overwrites once the call
// has returned.
type HF struct {
	name string

	vocab  map[string]int
	tokens []string // id -> token text; "" for unused ids
	merges map[uint64]uint64

	added        []addedToken
	addedByFirst [256][]int // indexes into added, longest content first
	addedID      map[int]string
	addedPlain   map[int]bool // non-special added tokens, decoded like model tokens

	normalizers []normalizeFunc
	pre         []preStep

	byteLevel    bool
	byteIDs      [256]int // vocabulary id of each byte's rune (byte-level), -1 when absent
	byteFallback bool
	fallbackIDs  [256]int // <0xNN> ids, -1 when absent
	unk          int      // -1 when none
	fuseUnk      bool
	ignoreMerges bool

	// Decoding: replacements to undo (in order) and the prefix each segment received.
	unreplace       [][2]string
	segPrefix       string
	prefixFirstOnly bool

	templateTokens int

	// wordMarker, when set, is the SentencePiece space marker ("▁") and no vocabulary entry
	// has it after another character; BPE then cannot merge across a marker that follows a
	// non-marker, so long pieces are cut there, which keeps results identical and lets the
	// word cache work on text without a pre-tokenizer.
	wordMarker string

	cache wordCache // piece -> ids, bounded; keys are copies (see wordCache)
}

type addedToken struct {
	content                  string
	id                       int
	lstrip, rstrip, wordOnly bool
}

// normalizeFunc rewrites a segment; cont says the segment continues earlier text (see
// CountContinuation), which only Prepend looks at.
type normalizeFunc func(s string, cont bool) string

// plain adapts a normalizer that ignores cont.
func plain(f func(string) string) normalizeFunc {
	return func(s string, _ bool) string { return f(s) }
}

// piece is a pre-tokenized part of the text; first marks the piece at the very start of the
// input (Metaspace's prepend_scheme "first" looks at it), cont a piece that continues earlier
// text and so takes no prefix (see CountContinuation).
type piece struct {
	s     string
	first bool
	cont  bool
}

type preStep func(in []piece) []piece

// maxCached is the size of one generation of an HF's word cache (see wordCache).
const maxCached = 1 << 16

// maxCachedLen is the longest piece, in bytes, that is cached.
const maxCachedLen = 64

// maxTokenID bounds ids so that a malformed file cannot make the id table huge.
const maxTokenID = 1 << 24

// gpt2Pattern is the split pattern ByteLevel applies when use_regex is true.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// Name implements Tokenizer: "hf:<path>" for LoadHF, "hf" for ParseHF.
func (h *HF) Name() string { return h.name }

// TemplateTokens is the number of special tokens (such as a BOS token) that the file's
// post-processor adds around a single sequence. Count and Encode leave them out; a server's
// reported prompt_tokens usually includes them.
func (h *HF) TemplateTokens() int { return h.templateTokens }

// byteTables maps each byte to the printable rune that byte-level BPE uses for it (GPT-2's
// table: printable Latin-1 bytes stand for themselves, the others take runes from U+0100 on),
// and back; made on first use, not at every command's start.
type byteTables struct {
	runes [256]string
	bytes map[rune]byte
}

var byteRuneTables = sync.OnceValue(func() *byteTables {
	t := &byteTables{bytes: make(map[rune]byte, 256)}
	next := rune(256)
	for b := 0; b < 256; b++ {
		r := rune(b)
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if !printable {
			r = next
			next++
		}
		t.runes[b] = string(r)
		t.bytes[r] = byte(b)
	}
	return t
})

func byteLevelString(w string) string {
	var b strings.Builder
	b.Grow(2 * len(w))
	runes := &byteRuneTables().runes
	for i := 0; i < len(w); i++ {
		b.WriteString(runes[w[i]])
	}
	return b.String()
}
