// Package tokenizer counts and produces tokens for prompt synthesis and token accounting.
//
// It holds the reference engine's own tokenizer (Reference), which is deterministic and
// documented so that the harness can build prompts of an exact token count for the reference
// engine and count its output exactly. The harness (workloads, loadgen) and the reference engine
// both use this package; it must stay free of network I/O and of any dependency on either side.
//
// # The reference tokenizer
//
// Text is split, left to right, into pieces; each piece is one token:
//
//  1. an optional single ASCII space followed by a run of ASCII letters [A-Za-z]+
//     (" hello", "world");
//  2. an optional single ASCII space followed by exactly one ASCII digit (" 4", "2");
//  3. an optional single ASCII space followed by exactly one other non-whitespace rune
//     (" ,", "!", "é");
//  4. a run of whitespace that is not the single leading space of a following piece
//     ("\n", "  " before a word counts as " " + " word").
//
// "Whitespace" means ASCII whitespace only; other space characters (U+00A0, U+3000) are
// "other runes" under rule 3. Invalid UTF-8 bytes count as one token each. Counts add up
// across a concatenation when the second text starts with one space followed by a
// non-space, which is why the engine's generated words (Word, Text) all begin with a space;
// in general they need not ("a"+"b" is one token). Token ids are a 64-bit FNV-1a hash of the
// piece modulo VocabSize; they are stable but not reversible.
//
// # Go API
//
// This package is a supported Go API: the Tokenizer interface, Reference, Approx, HF (LoadHF,
// ParseHF, a pure-Go reader of Hugging Face tokenizer.json files) and Load. Token counts of a
// given tokenizer and text do not change between releases except to fix a difference from
// the Hugging Face library.
package tokenizer

import (
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"unicode/utf8"
)

// VocabSize is the id space of the reference tokenizer (Llama 3's vocabulary size).
const VocabSize = 128256

// Tokenizer counts tokens in text. Implementations must be safe for concurrent use. The
// package's implementations keep no string passed to them once a call returns (HF's word
// cache stores copies); callers that cannot rely on that for another implementation copy
// first (see CountChunkBytes).
type Tokenizer interface {
	// Name identifies the tokenizer in results ("reference", "hf:<path>", "approx").
	Name() string
	// Count returns the number of tokens in text.
	Count(text string) int
	// Encode returns the token ids of text.
	Encode(text string) []int
}

// Reference is the reference engine's tokenizer. Its zero value is ready to use.
type Reference struct{}

// Name implements Tokenizer.
func (Reference) Name() string { return "reference" }

// Count implements Tokenizer without allocating.
func (Reference) Count(text string) int {
	n := 0
	for i := 0; i < len(text); {
		i = nextPiece(text, i)
		n++
	}
	return n
}

// Encode implements Tokenizer.
func (Reference) Encode(text string) []int {
	ids := make([]int, 0, len(text)/4+1)
	for i := 0; i < len(text); {
		j := nextPiece(text, i)
		ids = append(ids, pieceID(text[i:j]))
		i = j
	}
	return ids
}

// Pieces returns the text of each token, in order.
func (Reference) Pieces(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		j := nextPiece(text, i)
		out = append(out, text[i:j])
		i = j
	}
	return out
}

// pieceID is the FNV-1a 64 hash of the piece modulo the vocabulary. hash/fnv does not allocate
// here (the hasher does not escape); Encode of 1.1 KB of prose measured 5.0-5.7 µs with it and
// 4.9-5.2 µs with a hand-written loop, 2 allocations either way.
func pieceID(p string) int {
	h := fnv.New64a()
	h.Write([]byte(p))
	return int(h.Sum64() % VocabSize)
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// nextPiece returns the end of the piece starting at i (i < len(s)).
func nextPiece(s string, i int) int {
	c := s[i]
	if isSpace(c) {
		// Whitespace run. If it ends right before a non-space and its last byte is an ASCII
		// space, that space belongs to the following piece (rule 1-3).
		j := i
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		if j < len(s) && s[j-1] == ' ' {
			if j-1 > i {
				return j - 1 // the run before the leading space is its own piece
			}
			// A single space followed by a non-space: a prefixed piece.
			return body(s, j)
		}
		return j
	}
	return body(s, i)
}

// body returns the end of the non-space piece starting at i.
func body(s string, i int) int {
	c := s[i]
	switch {
	case isLetter(c):
		j := i + 1
		for j < len(s) && isLetter(s[j]) {
			j++
		}
		return j
	case isDigit(c) || c < utf8.RuneSelf:
		return i + 1
	default:
		_, size := utf8.DecodeRuneInString(s[i:])
		return i + size
	}
}

// syllables used to build the reference vocabulary of words.
var (
	onsets = []string{"b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "ch", "cl", "dr", "fl", "gr", "pl", "pr", "sh", "st", "th", "tr"}
	nuclei = []string{"a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y"}
)

// WordCount is the number of distinct words Word produces.
const WordCount = 30 * 10 * 30 * 10 // two syllables each

// Word returns the k-th word of the reference vocabulary, with a leading space, for k taken
// modulo WordCount. Every word is exactly one reference token, and any concatenation of
// words is exactly as many tokens as words. Word never allocates: the words are made on the
// first call, all at once.
func Word(k uint64) string { return words()[k%WordCount] }

// words is the reference vocabulary, made on first use: as a package variable it was 90,000
// strings (2 MB) made at the start of every command, `llmbench version` included. The words
// are slices of one string, so making them is two allocations.
var words = sync.OnceValue(func() []string {
	var b strings.Builder
	b.Grow(WordCount * 7)
	ends := make([]int, 0, WordCount)
	for a := range onsets {
		for n := range nuclei {
			for c := range onsets {
				for d := range nuclei {
					b.WriteByte(' ')
					b.WriteString(onsets[a])
					b.WriteString(nuclei[n])
					b.WriteString(onsets[c])
					b.WriteString(nuclei[d])
					ends = append(ends, b.Len())
				}
			}
		}
	}
	all := b.String()
	w := make([]string, WordCount)
	start := 0
	for i, end := range ends {
		w[i] = all[start:end]
		start = end
	}
	return w
})

// Mix is a stateless 64-bit mixer (splitmix64's finalizer); the engine and prompt synthesis
// use it to pick words deterministically from (seed, position).
func Mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Text returns n reference tokens of word text chosen deterministically from seed, starting
// at token position start. Text(seed, 0, a) + Text(seed, a, b) == Text(seed, 0, a+b), so a
// prefix is byte-identical for equal seeds.
func Text(seed uint64, start, n int) string {
	if n <= 0 || start < 0 || start > math.MaxInt-n {
		return ""
	}
	b := make([]byte, 0, min(n, 1<<20)*6) // grows past 2^20 tokens rather than overflow n*6
	w := words()
	for i := start; i < start+n; i++ {
		b = append(b, w[Mix(seed^Mix(uint64(i)))%WordCount]...)
	}
	return string(b)
}
