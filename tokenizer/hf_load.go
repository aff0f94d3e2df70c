package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Reading a tokenizer.json file into an HF: the model, merges, added tokens, normalizers,
// pre-tokenizers and the post-processor's template.

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
		runes := &byteRuneTables().runes
		for b := 0; b < 256; b++ {
			h.byteIDs[b] = -1
			if id, ok := h.vocab[runes[b]]; ok {
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
		if err := h.loadReplace(&c, field); err != nil {
			return err
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

// loadReplace reads a Replace normalizer: a String or Regex pattern and its content.
func (h *HF) loadReplace(c *hfComponent, field string) error {
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
	return nil
}

func (h *HF) undoReplace(s string) string {
	for _, r := range h.unreplace {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}

// loadPreTokenizer appends the pre-tokenizer steps of raw (a pre_tokenizer component) to h.pre.
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
		return nil
	case "Split":
		return h.loadSplit(&c, field)
	case "ByteLevel":
		return h.loadByteLevel(&c)
	case "Metaspace":
		return h.loadMetaspace(&c, field)
	case "Digits":
		pattern := `\p{Nd}+`
		if c.IndividualDigits {
			pattern = `\p{Nd}`
		}
		return h.regexStep(pattern, splitIsolated, false)
	case "Whitespace":
		return h.regexStep(`\w+|[^\w\s]+`, splitRemoved, true)
	case "WhitespaceSplit":
		return h.regexStep(`\s+`, splitRemoved, false)
	}
	return fmt.Errorf("%s: type %q is not supported (supported: Sequence, Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit)", field, c.Type)
}

// regexStep appends a step that splits every piece at the matches of pattern.
func (h *HF) regexStep(pattern string, b splitBehavior, invert bool) error {
	re, err := compileRegex(pattern)
	if err != nil {
		return err
	}
	h.pre = append(h.pre, splitStep(func(s string) [][2]int { return re.findAll(s, nil) }, b, invert))
	return nil
}

// loadSplit reads a Split pre-tokenizer: a String or Regex pattern and a behavior.
func (h *HF) loadSplit(c *hfComponent, field string) error {
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
	return nil
}

// loadByteLevel reads a ByteLevel pre-tokenizer: the byte-to-rune mapping, an optional prefix
// space and GPT-2's split pattern.
func (h *HF) loadByteLevel(c *hfComponent) error {
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
	return nil
}

// loadMetaspace reads a Metaspace pre-tokenizer: spaces become the replacement character,
// prepended by the prepend scheme, and words split before it.
func (h *HF) loadMetaspace(c *hfComponent, field string) error {
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
