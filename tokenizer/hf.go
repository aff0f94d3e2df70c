package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
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
// An HF is immutable after loading apart from an internal word cache, and safe for
// concurrent use.
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

	cache  sync.Map // piece -> []int
	cached atomic.Int64
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

// maxCached bounds the number of words kept in an HF's cache.
const maxCached = 1 << 16

// maxCachedLen is the longest piece, in bytes, that is cached.
const maxCachedLen = 64

// maxTokenID bounds ids so that a malformed file cannot make the id table huge.
const maxTokenID = 1 << 24

// gpt2Pattern is the split pattern ByteLevel applies when use_regex is true.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// LoadHF reads a Hugging Face tokenizer.json file. Its Name is "hf:" followed by path.
func LoadHF(path string) (*HF, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	h, err := ParseHF(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	h.name = "hf:" + path
	return h, nil
}

// ParseHF builds a tokenizer from the contents of a tokenizer.json file. Its Name is "hf".
// Errors name the JSON field at fault.
func ParseHF(data []byte) (*HF, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json file: %w", err)
	}
	h := &HF{name: "hf", unk: -1, addedID: map[int]string{}, addedPlain: map[int]bool{}}
	if err := h.loadModel(&f.Model); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if err := h.loadAdded(f.AddedTokens); err != nil {
		return nil, fmt.Errorf("added_tokens: %w", err)
	}
	if err := h.loadNormalizer(f.Normalizer, "normalizer"); err != nil {
		return nil, err
	}
	if err := h.loadPreTokenizer(f.PreTokenizer, "pre_tokenizer"); err != nil {
		return nil, err
	}
	n, err := templateTokens(f.PostProcessor, 0)
	if err != nil {
		return nil, fmt.Errorf("post_processor: %w", err)
	}
	h.templateTokens = n
	h.wordMarker = h.findWordMarker()
	if h.byteLevel {
		for b := 0; b < 256; b++ {
			h.byteIDs[b] = -1
			if id, ok := h.vocab[byteRunes[b]]; ok {
				h.byteIDs[b] = id
			}
		}
	}
	return h, nil
}

type hfFile struct {
	AddedTokens   []hfAdded       `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Model         hfModel         `json:"model"`
}

type hfAdded struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	Lstrip     bool   `json:"lstrip"`
	Rstrip     bool   `json:"rstrip"`
	Special    bool   `json:"special"`
}

type hfModel struct {
	Type                    string          `json:"type"`
	Vocab                   map[string]int  `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
}

type hfComponent struct {
	Type          string            `json:"type"`
	Normalizers   []json.RawMessage `json:"normalizers"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	Processors    []json.RawMessage `json:"processors"`

	Prepend *string    `json:"prepend"`
	Pattern *hfPattern `json:"pattern"`
	Content *string    `json:"content"`

	Behavior string `json:"behavior"`
	Invert   bool   `json:"invert"`

	AddPrefixSpace *bool `json:"add_prefix_space"`
	UseRegex       *bool `json:"use_regex"`

	Replacement   *string `json:"replacement"`
	PrependScheme string  `json:"prepend_scheme"`
	Split         *bool   `json:"split"`

	IndividualDigits bool `json:"individual_digits"`
	StripLeft        bool `json:"strip_left"`
	StripRight       bool `json:"strip_right"`

	Single []map[string]json.RawMessage `json:"single"`
}

type hfPattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

func (h *HF) loadModel(m *hfModel) error {
	if m.Type != "BPE" && !(m.Type == "" && m.Merges != nil) {
		return fmt.Errorf("type %q is not supported: llmbench reads BPE tokenizers only (not WordPiece, Unigram or WordLevel)", m.Type)
	}
	if len(m.Vocab) == 0 {
		return errors.New("vocab is missing or empty")
	}
	if p := m.ContinuingSubwordPrefix; p != nil && *p != "" {
		return fmt.Errorf("continuing_subword_prefix %q is not supported", *p)
	}
	if s := m.EndOfWordSuffix; s != nil && *s != "" {
		return fmt.Errorf("end_of_word_suffix %q is not supported", *s)
	}
	h.vocab = m.Vocab
	maxID := -1
	for tok, id := range m.Vocab {
		if id < 0 || id >= maxTokenID {
			return fmt.Errorf("vocab[%q] = %d is outside 0..%d", tok, id, maxTokenID-1)
		}
		maxID = max(maxID, id)
	}
	if maxID >= 2*len(m.Vocab)+1024 {
		return fmt.Errorf("vocab ids reach %d for %d entries: ids must be dense (0..n-1)", maxID, len(m.Vocab))
	}
	h.tokens = make([]string, maxID+1)
	for tok, id := range m.Vocab {
		h.tokens[id] = tok
	}
	if err := h.loadMerges(m.Merges); err != nil {
		return err
	}
	if m.UnkToken != nil {
		id, ok := m.Vocab[*m.UnkToken]
		if !ok {
			return fmt.Errorf("unk_token %q is not in the vocab", *m.UnkToken)
		}
		h.unk = id
	}
	h.fuseUnk = m.FuseUnk
	h.byteFallback = m.ByteFallback
	h.ignoreMerges = m.IgnoreMerges
	for b := 0; b < 256; b++ {
		h.fallbackIDs[b] = -1
		if id, ok := m.Vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			h.fallbackIDs[b] = id
		}
	}
	return nil
}

func (h *HF) loadMerges(raw json.RawMessage) error {
	var pairs [][2]string
	if !isNull(raw) {
		var asStrings []string
		if err := json.Unmarshal(raw, &asStrings); err == nil {
			pairs = make([][2]string, len(asStrings))
			for i, s := range asStrings {
				a, b, ok := strings.Cut(s, " ")
				if !ok || a == "" || b == "" || strings.Contains(b, " ") {
					return fmt.Errorf("merges[%d] = %q: want two tokens separated by one space", i, s)
				}
				pairs[i] = [2]string{a, b}
			}
		} else if err := json.Unmarshal(raw, &pairs); err != nil {
			return fmt.Errorf("merges: want a list of \"a b\" strings or of [a, b] pairs: %w", err)
		}
	}
	h.merges = make(map[uint64]uint64, len(pairs))
	for i, p := range pairs {
		a, okA := h.vocab[p[0]]
		b, okB := h.vocab[p[1]]
		m, okM := h.vocab[p[0]+p[1]]
		if !okA || !okB || !okM {
			return fmt.Errorf("merges[%d] = %q: %q, %q and their concatenation must all be in the vocab", i, p, p[0], p[1])
		}
		key := uint64(a)<<32 | uint64(b)
		if _, dup := h.merges[key]; !dup {
			h.merges[key] = uint64(i)<<32 | uint64(m)
		}
	}
	return nil
}

func (h *HF) loadAdded(list []hfAdded) error {
	for i, a := range list {
		if a.Content == "" {
			return fmt.Errorf("[%d]: empty content", i)
		}
		if a.ID < 0 || a.ID >= maxTokenID {
			return fmt.Errorf("[%d] %q: id %d is outside 0..%d", i, a.Content, a.ID, maxTokenID-1)
		}
		if _, dup := h.addedID[a.ID]; dup {
			continue
		}
		h.addedID[a.ID] = a.Content
		h.addedPlain[a.ID] = !a.Special
		h.added = append(h.added, addedToken{content: a.Content, id: a.ID, lstrip: a.Lstrip, rstrip: a.Rstrip, wordOnly: a.SingleWord})
	}
	for i, a := range h.added {
		h.addedByFirst[a.content[0]] = append(h.addedByFirst[a.content[0]], i)
	}
	for b := range h.addedByFirst {
		list := h.addedByFirst[b]
		// Longest first, so the first hit at a position is the leftmost-longest match.
		for i := 1; i < len(list); i++ {
			for j := i; j > 0 && len(h.added[list[j]].content) > len(h.added[list[j-1]].content); j-- {
				list[j], list[j-1] = list[j-1], list[j]
			}
		}
	}
	return nil
}

func (h *HF) loadNormalizer(raw json.RawMessage, field string) error {
	if isNull(raw) {
		return nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	switch c.Type {
	case "Sequence":
		for i, sub := range c.Normalizers {
			if err := h.loadNormalizer(sub, fmt.Sprintf("%s.normalizers[%d]", field, i)); err != nil {
				return err
			}
		}
	case "Prepend":
		if c.Prepend == nil {
			return fmt.Errorf("%s: Prepend without \"prepend\"", field)
		}
		p := *c.Prepend
		h.normalizers = append(h.normalizers, func(s string, cont bool) string {
			if s == "" || cont {
				return s
			}
			return p + s
		})
		if h.segPrefix == "" {
			h.segPrefix = p // turned into its decoded form once all normalizers are read
		}
	case "Replace":
		if c.Pattern == nil || c.Content == nil {
			return fmt.Errorf("%s: Replace needs \"pattern\" and \"content\"", field)
		}
		content := *c.Content
		switch {
		case c.Pattern.String != nil:
			old := *c.Pattern.String
			if old == "" {
				return fmt.Errorf("%s: Replace with an empty String pattern", field)
			}
			h.normalizers = append(h.normalizers, plain(func(s string) string { return strings.ReplaceAll(s, old, content) }))
			h.unreplace = append([][2]string{{content, old}}, h.unreplace...)
		case c.Pattern.Regex != nil:
			re, err := compileRegex(*c.Pattern.Regex)
			if err != nil {
				return fmt.Errorf("%s.pattern.Regex: %w", field, err)
			}
			h.normalizers = append(h.normalizers, plain(func(s string) string { return replaceAll(re, s, content) }))
		default:
			return fmt.Errorf("%s: Replace pattern needs \"String\" or \"Regex\"", field)
		}
	case "NFC":
		h.normalizers = append(h.normalizers, plain(norm.NFC.String))
	case "NFD":
		h.normalizers = append(h.normalizers, plain(norm.NFD.String))
	case "NFKC":
		h.normalizers = append(h.normalizers, plain(norm.NFKC.String))
	case "NFKD":
		h.normalizers = append(h.normalizers, plain(norm.NFKD.String))
	case "Lowercase":
		h.normalizers = append(h.normalizers, plain(strings.ToLower))
	case "Strip":
		left, right := c.StripLeft, c.StripRight
		h.normalizers = append(h.normalizers, plain(func(s string) string {
			if left {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if right {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}))
	default:
		return fmt.Errorf("%s: type %q is not supported (supported: Sequence, Prepend, Replace, NFC, NFD, NFKC, NFKD, Lowercase, Strip)", field, c.Type)
	}
	if field == "normalizer" && h.segPrefix != "" {
		h.segPrefix = h.undoReplace(h.segPrefix)
	}
	return nil
}

func replaceAll(re *regex, s, content string) string {
	m := re.findAll(s, nil)
	if len(m) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, r := range m {
		b.WriteString(s[last:r[0]])
		b.WriteString(content)
		last = r[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

func (h *HF) undoReplace(s string) string {
	for _, r := range h.unreplace {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}

func (h *HF) loadPreTokenizer(raw json.RawMessage, field string) error {
	if isNull(raw) {
		return nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	switch c.Type {
	case "Sequence":
		for i, sub := range c.Pretokenizers {
			if err := h.loadPreTokenizer(sub, fmt.Sprintf("%s.pretokenizers[%d]", field, i)); err != nil {
				return err
			}
		}
	case "Split":
		if c.Pattern == nil {
			return fmt.Errorf("%s: Split without \"pattern\"", field)
		}
		behavior, err := parseBehavior(c.Behavior)
		if err != nil {
			return fmt.Errorf("%s.behavior: %w", field, err)
		}
		var find func(string) [][2]int
		switch {
		case c.Pattern.Regex != nil:
			re, err := compileRegex(*c.Pattern.Regex)
			if err != nil {
				return fmt.Errorf("%s.pattern.Regex: %w (supported: the patterns of GPT-2, cl100k/Llama 3, o200k, Qwen2 and others within the syntax listed in the HF type's doc)", field, err)
			}
			find = func(s string) [][2]int { return re.findAll(s, nil) }
		case c.Pattern.String != nil:
			lit := *c.Pattern.String
			if lit == "" {
				return fmt.Errorf("%s: Split with an empty String pattern", field)
			}
			find = func(s string) [][2]int { return findLiteral(s, lit) }
		default:
			return fmt.Errorf("%s: Split pattern needs \"String\" or \"Regex\"", field)
		}
		invert := c.Invert
		h.pre = append(h.pre, splitStep(find, behavior, invert))
	case "ByteLevel":
		h.byteLevel = true
		prefix := c.AddPrefixSpace == nil || *c.AddPrefixSpace
		useRegex := c.UseRegex == nil || *c.UseRegex
		var re *regex
		if useRegex {
			var err error
			if re, err = compileRegex(gpt2Pattern); err != nil {
				return err
			}
		}
		if prefix && h.segPrefix == "" {
			h.segPrefix = " "
		}
		h.pre = append(h.pre, func(in []piece) []piece {
			out := make([]piece, 0, len(in))
			for _, p := range in {
				if prefix && !p.cont && !strings.HasPrefix(p.s, " ") {
					p.s = " " + p.s
				}
				if re == nil {
					out = append(out, p)
					continue
				}
				out = appendSplit(out, p, re.findAll(p.s, nil), splitIsolated, false)
			}
			return out
		})
	case "Metaspace":
		repl := "▁"
		if c.Replacement != nil {
			repl = *c.Replacement
		}
		if utf8.RuneCountInString(repl) != 1 {
			return fmt.Errorf("%s.replacement %q: want one character", field, repl)
		}
		scheme := c.PrependScheme
		if scheme == "" {
			scheme = "always"
			if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
				scheme = "never"
			}
		}
		if scheme != "always" && scheme != "first" && scheme != "never" {
			return fmt.Errorf("%s.prepend_scheme %q: want always, first or never", field, scheme)
		}
		split := c.Split == nil || *c.Split
		h.unreplace = append(h.unreplace, [2]string{repl, " "})
		if scheme != "never" && h.segPrefix == "" {
			h.segPrefix, h.prefixFirstOnly = " ", scheme == "first"
		}
		h.pre = append(h.pre, func(in []piece) []piece {
			out := make([]piece, 0, len(in))
			for _, p := range in {
				p.s = strings.ReplaceAll(p.s, " ", repl)
				if !p.cont && !strings.HasPrefix(p.s, repl) && (scheme == "always" || scheme == "first" && p.first) {
					p.s = repl + p.s
				}
				if !split {
					out = append(out, p)
					continue
				}
				out = appendSplit(out, p, findLiteral(p.s, repl), splitMergedWithNext, false)
			}
			return out
		})
	case "Digits":
		pattern := `\p{Nd}+`
		if c.IndividualDigits {
			pattern = `\p{Nd}`
		}
		re, err := compileRegex(pattern)
		if err != nil {
			return err
		}
		h.pre = append(h.pre, splitStep(func(s string) [][2]int { return re.findAll(s, nil) }, splitIsolated, false))
	case "Whitespace":
		re, err := compileRegex(`\w+|[^\w\s]+`)
		if err != nil {
			return err
		}
		h.pre = append(h.pre, splitStep(func(s string) [][2]int { return re.findAll(s, nil) }, splitRemoved, true))
	case "WhitespaceSplit":
		re, err := compileRegex(`\s+`)
		if err != nil {
			return err
		}
		h.pre = append(h.pre, splitStep(func(s string) [][2]int { return re.findAll(s, nil) }, splitRemoved, false))
	default:
		return fmt.Errorf("%s: type %q is not supported (supported: Sequence, Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit)", field, c.Type)
	}
	return nil
}

type splitBehavior uint8

const (
	splitIsolated splitBehavior = iota
	splitRemoved
	splitMergedWithPrevious
	splitMergedWithNext
	splitContiguous
)

func parseBehavior(s string) (splitBehavior, error) {
	switch s {
	case "Isolated", "":
		return splitIsolated, nil
	case "Removed":
		return splitRemoved, nil
	case "MergedWithPrevious":
		return splitMergedWithPrevious, nil
	case "MergedWithNext":
		return splitMergedWithNext, nil
	case "Contiguous":
		return splitContiguous, nil
	}
	return 0, fmt.Errorf("%q is not one of Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous", s)
}

func splitStep(find func(string) [][2]int, b splitBehavior, invert bool) preStep {
	return func(in []piece) []piece {
		out := make([]piece, 0, len(in))
		for _, p := range in {
			out = appendSplit(out, p, find(p.s), b, invert)
		}
		return out
	}
}

func findLiteral(s, lit string) [][2]int {
	var m [][2]int
	for i := 0; ; {
		j := strings.Index(s[i:], lit)
		if j < 0 {
			return m
		}
		m = append(m, [2]int{i + j, i + j + len(lit)})
		i += j + len(lit)
	}
}

// appendSplit cuts p at the matches (sorted, non-overlapping) as behavior b says.
func appendSplit(out []piece, p piece, matches [][2]int, b splitBehavior, invert bool) []piece {
	out = slices.Grow(out, 2*len(matches)+1)
	emit := func(start, end int) {
		if end > start {
			out = append(out, piece{s: p.s[start:end], first: p.first && start == 0, cont: p.cont && start == 0})
		}
	}
	// regions calls fn for the gaps and matches that tile p.s, in order; with invert the two
	// trade places.
	regions := func(fn func(start, end int, match bool)) {
		last := 0
		for _, m := range matches {
			if m[0] > last {
				fn(last, m[0], invert)
			}
			fn(m[0], m[1], !invert)
			last = m[1]
		}
		if last < len(p.s) {
			fn(last, len(p.s), invert)
		}
	}
	switch b {
	case splitIsolated:
		regions(func(start, end int, _ bool) { emit(start, end) })
	case splitRemoved:
		regions(func(start, end int, match bool) {
			if !match {
				emit(start, end)
			}
		})
	case splitMergedWithPrevious:
		from := 0
		regions(func(_, end int, match bool) {
			if match {
				emit(from, end)
				from = end
			}
		})
		emit(from, len(p.s))
	case splitMergedWithNext:
		from := 0
		regions(func(start, _ int, match bool) {
			if match {
				emit(from, start)
				from = start
			}
		})
		emit(from, len(p.s))
	case splitContiguous:
		from, kind, seen := 0, false, false
		regions(func(start, _ int, match bool) {
			if seen && match != kind {
				emit(from, start)
				from = start
			}
			kind, seen = match, true
		})
		emit(from, len(p.s))
	}
	return out
}

// templateTokens counts the special tokens a post_processor adds around one sequence.
func templateTokens(raw json.RawMessage, depth int) (int, error) {
	if isNull(raw) {
		return 0, nil
	}
	if depth > 16 {
		return 0, errors.New("nested too deeply")
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return 0, err
	}
	switch c.Type {
	case "TemplateProcessing":
		n := 0
		for _, item := range c.Single {
			if _, ok := item["SpecialToken"]; ok {
				n++
			}
		}
		return n, nil
	case "BertProcessing", "RobertaProcessing":
		return 2, nil
	case "Sequence":
		n := 0
		for _, sub := range c.Processors {
			k, err := templateTokens(sub, depth+1)
			if err != nil {
				return 0, err
			}
			n += k
		}
		return n, nil
	}
	return 0, nil
}

// Name implements Tokenizer: "hf:<path>" for LoadHF, "hf" for ParseHF.
func (h *HF) Name() string { return h.name }

// TemplateTokens is the number of special tokens (such as a BOS token) that the file's
// post-processor adds around a single sequence. Count and Encode leave them out; a server's
// reported prompt_tokens usually includes them.
func (h *HF) TemplateTokens() int { return h.templateTokens }

// Count implements Tokenizer.
func (h *HF) Count(text string) int {
	n := 0
	h.walk(text, false, func(ids []int) { n += len(ids) })
	return n
}

// CountContinuation counts text as it is tokenized in the middle of a longer input: no
// prefix is added at its start (the "▁" of a Prepend normalizer or Metaspace pre-tokenizer,
// ByteLevel's add_prefix_space). Streamed chunks need it: a SentencePiece-style Count(" world")
// is 2 ("▁" + "▁world") where the model emitted one token. For files without such a prefix
// (Llama 3, Qwen, GPT-style) it equals Count. CountChunk picks it when available.
func (h *HF) CountContinuation(text string) int {
	n := 0
	h.walk(text, true, func(ids []int) { n += len(ids) })
	return n
}

// Encode implements Tokenizer.
func (h *HF) Encode(text string) []int {
	ids := make([]int, 0, len(text)/3+1)
	h.walk(text, false, func(t []int) { ids = append(ids, t...) })
	return ids
}

// walk calls emit with the ids of text, in order; cont marks text that continues earlier
// text.
func (h *HF) walk(text string, cont bool, emit func([]int)) {
	start := 0
	var one [1]int
	for i := 0; i < len(text); {
		a, ms, me := h.matchAdded(text, i, start)
		if a == nil {
			i++
			continue
		}
		h.walkSegment(text[start:ms], start == 0 && !cont, start == 0 && cont, emit)
		one[0] = a.id
		emit(one[:])
		start, i = me, me
	}
	h.walkSegment(text[start:], start == 0 && !cont, start == 0 && cont, emit)
}

// matchAdded returns the added token at text[i:], with the span it covers once lstrip and
// rstrip take the whitespace around it (never before floor).
func (h *HF) matchAdded(text string, i, floor int) (a *addedToken, start, end int) {
	for _, k := range h.addedByFirst[text[i]] {
		t := &h.added[k]
		if !strings.HasPrefix(text[i:], t.content) {
			continue
		}
		end := i + len(t.content)
		if t.wordOnly {
			before, _ := utf8.DecodeLastRuneInString(text[:i])
			after, _ := utf8.DecodeRuneInString(text[end:])
			if i > 0 && isWordRune(before) || end < len(text) && isWordRune(after) {
				return nil, 0, 0
			}
		}
		start := i
		if t.lstrip {
			for start > floor {
				r, size := utf8.DecodeLastRuneInString(text[floor:start])
				if !unicode.IsSpace(r) {
					break
				}
				start -= size
			}
		}
		if t.rstrip {
			for end < len(text) {
				r, size := utf8.DecodeRuneInString(text[end:])
				if !unicode.IsSpace(r) {
					break
				}
				end += size
			}
		}
		return t, start, end
	}
	return nil, 0, 0
}

// findWordMarker returns the space marker that SentencePiece-style BPE cannot merge across,
// or "" (see HF.wordMarker).
func (h *HF) findWordMarker() string {
	if h.byteLevel || h.ignoreMerges {
		// ignore_merges looks up whole pieces, so cutting them could change the result.
		return ""
	}
	marker := ""
	for _, r := range h.unreplace {
		if r[1] == " " {
			marker = r[0]
			break
		}
	}
	if marker == "" {
		return ""
	}
	if _, ok := h.vocab[marker]; !ok {
		return "" // an unknown marker could fuse with a neighbouring <unk>
	}
	for tok := range h.vocab {
		if i := strings.Index(strings.TrimLeft(tok, marker), marker); i >= 0 {
			return ""
		}
	}
	return marker
}

// cutAtMarkers calls fn for the parts of w that begin at a marker following a non-marker.
func cutAtMarkers(w, marker string, fn func(string)) {
	start := 0
	for i := len(marker); i < len(w); {
		j := strings.Index(w[i:], marker)
		if j < 0 {
			break
		}
		at := i + j
		if !strings.HasSuffix(w[:at], marker) {
			fn(w[start:at])
			start = at
		}
		i = at + len(marker)
	}
	fn(w[start:])
}

// walkSegment encodes text that holds no added token.
func (h *HF) walkSegment(seg string, first, cont bool, emit func([]int)) {
	if seg == "" {
		return
	}
	for _, n := range h.normalizers {
		seg = n(seg, cont)
	}
	pieces := []piece{{s: seg, first: first, cont: cont}}
	for _, step := range h.pre {
		pieces = step(pieces)
	}
	for _, p := range pieces {
		switch {
		case p.s == "":
		case h.wordMarker != "" && len(p.s) > maxCachedLen:
			cutAtMarkers(p.s, h.wordMarker, func(w string) { emit(h.word(w)) })
		default:
			emit(h.word(p.s))
		}
	}
}

// word returns the BPE ids of one pre-tokenized piece. The slice must not be modified.
func (h *HF) word(w string) []int {
	if len(w) <= maxCachedLen {
		if ids, ok := h.cache.Load(w); ok {
			return ids.([]int)
		}
	}
	ids := h.bpe(w)
	if len(w) <= maxCachedLen && h.cached.Load() < maxCached {
		if _, loaded := h.cache.LoadOrStore(w, ids); !loaded {
			h.cached.Add(1)
		}
	}
	return ids
}

// resetCache empties the word cache (benchmarks measure cold encoding with it).
func (h *HF) resetCache() {
	h.cache.Clear()
	h.cached.Store(0)
}

func (h *HF) bpe(w string) []int {
	if h.ignoreMerges {
		key := w
		if h.byteLevel {
			key = byteLevelString(w)
		}
		if id, ok := h.vocab[key]; ok {
			return []int{id}
		}
	}
	syms := h.symbols(w)
	if len(syms) < 2 {
		ids := make([]int, len(syms))
		for i, s := range syms {
			ids[i] = s.id
		}
		return ids
	}
	var q mergeQueue
	for i := 0; i+1 < len(syms); i++ {
		if m, ok := h.merges[uint64(syms[i].id)<<32|uint64(syms[i+1].id)]; ok {
			q = append(q, mergeCand{pos: i, rank: int(m >> 32), id: int(uint32(m))})
		}
	}
	q.init()
	for len(q) > 0 {
		top := q.pop()
		left := &syms[top.pos]
		if left.dead || left.next < 0 {
			continue
		}
		right := &syms[left.next]
		m, ok := h.merges[uint64(left.id)<<32|uint64(right.id)]
		if !ok || int(uint32(m)) != top.id {
			continue
		}
		left.id = top.id
		right.dead = true
		left.next = right.next
		if left.next >= 0 {
			syms[left.next].prev = top.pos
		}
		if left.prev >= 0 {
			if m, ok := h.merges[uint64(syms[left.prev].id)<<32|uint64(left.id)]; ok {
				q.push(mergeCand{pos: left.prev, rank: int(m >> 32), id: int(uint32(m))})
			}
		}
		if left.next >= 0 {
			if m, ok := h.merges[uint64(left.id)<<32|uint64(syms[left.next].id)]; ok {
				q.push(mergeCand{pos: top.pos, rank: int(m >> 32), id: int(uint32(m))})
			}
		}
	}
	ids := make([]int, 0, len(syms))
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		ids = append(ids, syms[i].id)
	}
	return ids
}

type symbol struct {
	id         int
	prev, next int
	dead       bool
}

// symbols returns the initial BPE symbols of w, linked in order.
func (h *HF) symbols(w string) []symbol {
	syms := make([]symbol, 0, len(w))
	add := func(id int) {
		syms = append(syms, symbol{id: id, prev: len(syms) - 1, next: len(syms) + 1})
	}
	if h.byteLevel {
		for i := 0; i < len(w); i++ {
			if id := h.byteIDs[w[i]]; id >= 0 {
				add(id)
			} else if h.unk >= 0 && !(h.fuseUnk && len(syms) > 0 && syms[len(syms)-1].id == h.unk) {
				add(h.unk)
			}
		}
	} else {
		pendingUnk := false
		for i := 0; i < len(w); {
			_, size := utf8.DecodeRuneInString(w[i:])
			ch := w[i : i+size]
			i += size
			if id, ok := h.vocab[ch]; ok {
				if pendingUnk {
					add(h.unk)
					pendingUnk = false
				}
				add(id)
				continue
			}
			if h.byteFallback && h.hasFallback(ch) {
				if pendingUnk {
					add(h.unk)
					pendingUnk = false
				}
				for j := 0; j < len(ch); j++ {
					add(h.fallbackIDs[ch[j]])
				}
				continue
			}
			if h.unk >= 0 {
				if pendingUnk && !h.fuseUnk {
					add(h.unk)
				}
				pendingUnk = true
			}
		}
		if pendingUnk {
			add(h.unk)
		}
	}
	if n := len(syms); n > 0 {
		syms[n-1].next = -1
	}
	return syms
}

func (h *HF) hasFallback(ch string) bool {
	for j := 0; j < len(ch); j++ {
		if h.fallbackIDs[ch[j]] < 0 {
			return false
		}
	}
	return true
}

type mergeCand struct{ pos, rank, id int }

// mergeQueue is a binary min-heap of merge candidates, ordered by rank and then by leftmost
// position, as the Hugging Face library orders them. (container/heap would box every
// candidate in an interface.)
type mergeQueue []mergeCand

func (q mergeQueue) less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].pos < q[j].pos
}

func (q *mergeQueue) init() {
	for i := len(*q)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

func (q *mergeQueue) push(c mergeCand) {
	*q = append(*q, c)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (q *mergeQueue) pop() mergeCand {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	*q = h[:last]
	q.down(0)
	return top
}

func (q mergeQueue) down(i int) {
	for {
		least := i
		if l := 2*i + 1; l < len(q) && q.less(l, least) {
			least = l
		}
		if r := 2*i + 2; r < len(q) && q.less(r, least) {
			least = r
		}
		if least == i {
			return
		}
		q[i], q[least] = q[least], q[i]
		i = least
	}
}

// Decode returns the text of ids: added tokens as written (non-special ones of
// SentencePiece-style files with "▁" turned back into spaces), model tokens with the
// byte-level mapping, the "▁" replacement and <0xNN> byte fallback undone, and the prefix
// that a Prepend normalizer, a Metaspace pre-tokenizer or ByteLevel's add_prefix_space put at
// the start of each segment removed. Ids outside the vocabulary are skipped.
//
// Decode(Encode(s)) == s for byte-level files when the normalizer leaves s unchanged (Qwen's
// NFC changes non-NFC text) and no lstrip/rstrip added token swallowed whitespace; for
// SentencePiece-style files it also needs s free of "▁" and, with a Metaspace pre-tokenizer,
// not starting with a space (that space is ambiguous, as in the Hugging Face library). For
// ids made by Encode, Encode(Decode(ids)) == ids in the same cases and whenever the text had
// no "▁"; prompt synthesis can rely on that to fit a text to an exact count.
func (h *HF) Decode(ids []int) string {
	var out strings.Builder
	var run []byte
	atTextStart := true // the current run of model tokens begins the text
	flush := func() {
		if len(run) == 0 {
			return
		}
		s := string(run)
		if !h.byteLevel {
			s = h.undoReplace(s)
		}
		// Each run is one segment between added tokens.
		if h.segPrefix != "" && (!h.prefixFirstOnly || atTextStart) {
			s = strings.TrimPrefix(s, h.segPrefix)
		}
		out.WriteString(s)
		run = run[:0]
	}
	for _, id := range ids {
		if content, ok := h.addedID[id]; ok {
			flush()
			if h.addedPlain[id] && !h.byteLevel {
				content = h.undoReplace(content) // Gemma's "▁▁" whitespace tokens
			}
			out.WriteString(content)
			atTextStart = false
			continue
		}
		if id >= 0 && id < len(h.tokens) && h.tokens[id] != "" {
			run = h.appendToken(run, h.tokens[id])
		}
	}
	flush()
	return out.String()
}

// appendToken appends the bytes of one model token.
func (h *HF) appendToken(b []byte, tok string) []byte {
	if h.byteLevel {
		for _, r := range tok {
			if c, ok := runeBytes[r]; ok {
				b = append(b, c)
			} else {
				b = utf8.AppendRune(b, r)
			}
		}
		return b
	}
	if h.byteFallback && len(tok) == 6 && strings.HasPrefix(tok, "<0x") && tok[5] == '>' {
		if v, err := strconv.ParseUint(tok[3:5], 16, 8); err == nil {
			return append(b, byte(v))
		}
	}
	return append(b, tok...)
}

// byteRunes maps each byte to the printable rune that byte-level BPE uses for it (GPT-2's
// table: printable Latin-1 bytes stand for themselves, the others take runes from U+0100 on).
var byteRunes, runeBytes = func() ([256]string, map[rune]byte) {
	var fwd [256]string
	back := make(map[rune]byte, 256)
	next := rune(256)
	for b := 0; b < 256; b++ {
		r := rune(b)
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if !printable {
			r = next
			next++
		}
		fwd[b] = string(r)
		back[r] = byte(b)
	}
	return fwd, back
}()

func byteLevelString(w string) string {
	var b strings.Builder
	b.Grow(2 * len(w))
	for i := 0; i < len(w); i++ {
		b.WriteString(byteRunes[w[i]])
	}
	return b.String()
}
