package tokenizer

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds a small backtracking regular-expression matcher for the pre-tokenizer
// patterns of Hugging Face tokenizer files. Those patterns are written for Oniguruma and use
// negative lookahead (`\s+(?!\S)`), which Go's regexp package does not have.
//
// Why not a library: github.com/dlclark/regexp2 runs these patterns too, but 5 to 10 times
// slower and allocating for every match, and pre-tokenizing is on the hot path of counting the
// tokens of every streamed chunk. BenchmarkSplitPattern1KB (Llama 3's pattern over 1 KB of
// English) measured this matcher at 10.8 µs/KB with 0 allocations against regexp2's
// 115 µs/KB on a quiet machine, and 28 µs/KB (0 allocations) against 143-165 µs/KB (425
// allocations) on a shared 2-core machine under load. regexp2 stays as a test-only oracle:
// FuzzSplitPatternsVsOracles checks this matcher against it on the lookahead patterns.
//
// The matcher has Perl (leftmost-first) semantics, like Oniguruma: alternatives are tried in
// order and quantifiers are greedy unless followed by '?'. It supports literals, '.', escapes
// (\s \S \d \D \w \W \p{..} \P{..} \pL \r \n \t \f \v \e \0 \xHH \x{H..} \uHHHH and escaped
// punctuation), bracket classes with ranges, negation and those escapes, groups (...), (?:...),
// flag groups (?i) (?i:...) (?-i:...), lookahead (?=...) (?!...), alternation, and the
// quantifiers ? * + {n} {n,} {n,m} with lazy forms. \s is Unicode White_Space, \d is \p{Nd},
// \w is letters, marks, \p{Nd} and \p{Pc}; \p{..} takes Unicode general categories and
// scripts. Anything else (anchors, backreferences, lookbehind, possessive quantifiers, POSIX
// classes) is refused with an error naming the construct.

// reOp is an instruction of the matcher's program.
type reOp uint8

const (
	opClass reOp = iota // match one rune in cls, then pc+1
	opSplit             // try x first, then y
	opJmp               // go to x
	opLook              // run sub-program look at pos; continue when its success != neg
	opMatch             // success
)

type reInst struct {
	op   reOp
	neg  bool
	x, y int
	cls  *runeClass
	look *regex
}

// regex is a compiled pattern. It is immutable and safe for concurrent use.
type regex struct {
	src   string
	insts []reInst

	// A pattern whose top level is an alternation also keeps one program per alternative
	// and the runes each can start with, so that a position tries only the alternatives
	// that can match there, in their order (which keeps leftmost-first semantics).
	alts      []*regex
	altFirst  [][]*runeClass // nil entry: the alternative can match empty; always try it
	altASCII  [utf8.RuneSelf]uint64
	altsReady bool
}

// maxStepsPlain bounds backtracking steps of one match attempt before the matcher restarts
// the attempt with memoization, which keeps pathological patterns polynomial.
const maxStepsPlain = 1 << 14

// maxRegexInsts bounds the program size; counted repetition can blow a pattern up.
const maxRegexInsts = 1 << 16

// compileRegex parses and compiles pattern.
func compileRegex(pattern string) (*regex, error) {
	p := &reParser{src: pattern}
	n, err := p.parseAlt()
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.src) {
		return nil, p.errorf("unexpected %q", p.src[p.pos:p.pos+1])
	}
	c := &reCompiler{}
	if err := c.emit(n); err != nil {
		return nil, fmt.Errorf("regex %q: %w", pattern, err)
	}
	c.insts = append(c.insts, reInst{op: opMatch})
	re := &regex{src: pattern, insts: c.insts}
	if n.kind == kAlt && len(n.subs) <= 64 {
		for _, sub := range n.subs {
			ac := &reCompiler{}
			if err := ac.emit(sub); err != nil {
				return nil, fmt.Errorf("regex %q: %w", pattern, err)
			}
			ac.insts = append(ac.insts, reInst{op: opMatch})
			re.alts = append(re.alts, &regex{src: pattern, insts: ac.insts})
			first, nullable := firstClasses(sub)
			if nullable {
				first = nil
			}
			re.altFirst = append(re.altFirst, first)
		}
		for r := rune(0); r < utf8.RuneSelf; r++ {
			for k := range re.alts {
				if re.canStart(k, r) {
					re.altASCII[r] |= 1 << k
				}
			}
		}
		re.altsReady = true
	}
	return re, nil
}

// firstClasses returns classes that cover every rune a match of n can start with, and
// whether n can match without consuming a rune (then the classes say nothing).
func firstClasses(n *reNode) (first []*runeClass, nullable bool) {
	switch n.kind {
	case kEmpty, kLook:
		// A lookahead consumes nothing; what follows it decides the first rune, and the
		// lookahead can only reject more, so skipping it is conservative.
		return nil, true
	case kClass:
		return []*runeClass{n.cls}, false
	case kConcat:
		for _, sub := range n.subs {
			f, null := firstClasses(sub)
			first = append(first, f...)
			if !null {
				return first, false
			}
		}
		return first, true
	case kAlt:
		for _, sub := range n.subs {
			f, null := firstClasses(sub)
			first = append(first, f...)
			nullable = nullable || null
		}
		return first, nullable
	case kRepeat:
		f, null := firstClasses(n.subs[0])
		return f, null || n.min == 0
	}
	return nil, true
}

// canStart reports whether alternative k may match at a rune r.
func (re *regex) canStart(k int, r rune) bool {
	first := re.altFirst[k]
	if first == nil {
		return true
	}
	for _, c := range first {
		if c.matches(r) {
			return true
		}
	}
	return false
}

// matchAt returns the end of the match starting at pos, or -1.
func (re *regex) matchAt(s string, pos int) int {
	if re.altsReady {
		if pos >= len(s) {
			for k, alt := range re.alts {
				if re.altFirst[k] == nil {
					if end := alt.matchAt(s, pos); end >= 0 {
						return end
					}
				}
			}
			return -1
		}
		if c := s[pos]; c < utf8.RuneSelf {
			for mask := re.altASCII[c]; mask != 0; mask &= mask - 1 {
				if end := re.alts[bits.TrailingZeros64(mask)].matchAt(s, pos); end >= 0 {
					return end
				}
			}
			return -1
		}
		r, _ := utf8.DecodeRuneInString(s[pos:])
		for k, alt := range re.alts {
			if re.canStart(k, r) {
				if end := alt.matchAt(s, pos); end >= 0 {
					return end
				}
			}
		}
		return -1
	}
	if end, ok := re.run(s, pos, nil); ok {
		return end
	}
	// Step budget exceeded: rerun with a visited set. A (pc, pos) state that was fully
	// explored once cannot succeed later, so pruning it keeps the leftmost-first answer.
	end, _ := re.run(s, pos, map[uint64]struct{}{})
	return end
}

type reThread struct{ pc, pos int }

// run executes the program. With visited == nil it gives up (ok=false) after maxStepsPlain
// steps; otherwise it always finishes. end is -1 when there is no match.
func (re *regex) run(s string, start int, visited map[uint64]struct{}) (end int, ok bool) {
	var buf [32]reThread
	stack := append(buf[:0], reThread{0, start})
	steps := 0
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		pc, pos := t.pc, t.pos
	thread:
		for {
			steps++
			if visited == nil {
				if steps > maxStepsPlain {
					return -1, false
				}
			} else {
				key := uint64(pc)<<32 | uint64(pos)
				if _, seen := visited[key]; seen {
					break thread
				}
				visited[key] = struct{}{}
			}
			in := &re.insts[pc]
			switch in.op {
			case opClass:
				if pos >= len(s) {
					break thread
				}
				r, size := rune(s[pos]), 1
				if r >= utf8.RuneSelf {
					r, size = utf8.DecodeRuneInString(s[pos:])
				}
				if !in.cls.matches(r) {
					break thread
				}
				pos += size
				pc++
			case opSplit:
				stack = append(stack, reThread{in.y, pos})
				pc = in.x
			case opJmp:
				pc = in.x
			case opLook:
				if (in.look.matchAt(s, pos) >= 0) == in.neg {
					break thread
				}
				pc++
			case opMatch:
				return pos, true
			}
		}
	}
	return -1, true
}

// findAll returns the [start, end) byte ranges of the successive non-overlapping, non-empty
// leftmost matches of re in s.
func (re *regex) findAll(s string, out [][2]int) [][2]int {
	for i := 0; i < len(s); {
		if end := re.matchAt(s, i); end > i {
			out = append(out, [2]int{i, end})
			i = end
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return out
}

// runeClass is a set of runes.
type runeClass struct {
	neg    bool
	fold   bool // case-insensitive: a rune matches when any rune of its fold orbit does
	ranges []rune
	tables []classTable
	ascii  [2]uint64 // membership of runes below 128, filled by prepare
	ready  bool
}

// prepare fills the ASCII bitmap; the class must not change afterwards.
func (c *runeClass) prepare() {
	if c.ready {
		return
	}
	for r := rune(0); r < utf8.RuneSelf; r++ {
		if c.matchSlow(r) {
			c.ascii[r>>6] |= 1 << (r & 63)
		}
	}
	c.ready = true
}

type classTable struct {
	tab *unicode.RangeTable // nil means the \w set
	neg bool
}

func (c *runeClass) matches(r rune) bool {
	if r < utf8.RuneSelf && c.ready {
		return c.ascii[r>>6]&(1<<(r&63)) != 0
	}
	return c.matchSlow(r)
}

func (c *runeClass) matchSlow(r rune) bool {
	in := c.has(r)
	if !in && c.fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if c.has(f) {
				in = true
				break
			}
		}
	}
	return in != c.neg
}

func (c *runeClass) has(r rune) bool {
	for i := 0; i+1 < len(c.ranges); i += 2 {
		if r >= c.ranges[i] && r <= c.ranges[i+1] {
			return true
		}
	}
	for _, t := range c.tables {
		var in bool
		if t.tab == nil {
			in = isWordRune(r)
		} else {
			in = unicode.Is(t.tab, r)
		}
		if in != t.neg {
			return true
		}
	}
	return false
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Pc, r)
}

// reNode is the parsed form of a pattern.
type reNode struct {
	kind     reKind
	subs     []*reNode
	cls      *runeClass
	min, max int // repeat bounds; max -1 is unbounded
	lazy     bool
	neg      bool // lookahead polarity
}

type reKind uint8

const (
	kEmpty reKind = iota
	kClass
	kConcat
	kAlt
	kRepeat
	kLook
)

type reParser struct {
	src  string
	pos  int
	fold bool
}

func (p *reParser) errorf(format string, args ...any) error {
	return fmt.Errorf("regex %q at offset %d: %s", p.src, p.pos, fmt.Sprintf(format, args...))
}

func (p *reParser) parseAlt() (*reNode, error) {
	var alts []*reNode
	for {
		n, err := p.parseConcat()
		if err != nil {
			return nil, err
		}
		alts = append(alts, n)
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			continue
		}
		break
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &reNode{kind: kAlt, subs: alts}, nil
}

func (p *reParser) parseConcat() (*reNode, error) {
	var seq []*reNode
	saved := p.fold
	defer func() { p.fold = saved }()
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '|' || c == ')' {
			break
		}
		atom, err := p.parseAtom()
		if err != nil {
			return nil, err
		}
		if atom == nil { // a flag-only group such as (?i)
			continue
		}
		atom, err = p.parseQuantifier(atom)
		if err != nil {
			return nil, err
		}
		seq = append(seq, atom)
	}
	switch len(seq) {
	case 0:
		return &reNode{kind: kEmpty}, nil
	case 1:
		return seq[0], nil
	}
	return &reNode{kind: kConcat, subs: seq}, nil
}

func (p *reParser) parseQuantifier(atom *reNode) (*reNode, error) {
	for p.pos < len(p.src) {
		var lo, hi int
		switch p.src[p.pos] {
		case '?':
			lo, hi = 0, 1
			p.pos++
		case '*':
			lo, hi = 0, -1
			p.pos++
		case '+':
			lo, hi = 1, -1
			p.pos++
		case '{':
			a, b, n, ok := parseBraces(p.src[p.pos:])
			if !ok {
				return atom, nil // a literal '{', as in Oniguruma
			}
			lo, hi = a, b
			p.pos += n
		default:
			return atom, nil
		}
		if atom.kind == kLook || atom.kind == kEmpty {
			return nil, p.errorf("quantifier after an empty expression")
		}
		lazy := false
		if p.pos < len(p.src) {
			switch p.src[p.pos] {
			case '?':
				lazy = true
				p.pos++
			case '+':
				return nil, p.errorf("possessive quantifiers are not supported")
			}
		}
		if hi >= 0 && lo > hi {
			return nil, p.errorf("repeat bounds {%d,%d} are reversed", lo, hi)
		}
		if lo > 1000 || hi > 1000 {
			return nil, p.errorf("repeat count over 1000")
		}
		atom = &reNode{kind: kRepeat, subs: []*reNode{atom}, min: lo, max: hi, lazy: lazy}
	}
	return atom, nil
}

// parseBraces reads {n}, {n,} or {n,m} at the start of s.
func parseBraces(s string) (lo, hi, n int, ok bool) {
	end := strings.IndexByte(s, '}')
	if end < 0 {
		return 0, 0, 0, false
	}
	body := s[1:end]
	a, b, comma := strings.Cut(body, ",")
	var err error
	if lo, err = strconv.Atoi(a); err != nil || lo < 0 {
		return 0, 0, 0, false
	}
	switch {
	case !comma:
		hi = lo
	case b == "":
		hi = -1
	default:
		if hi, err = strconv.Atoi(b); err != nil || hi < 0 {
			return 0, 0, 0, false
		}
	}
	return lo, hi, end + 1, true
}

func (p *reParser) parseAtom() (*reNode, error) {
	c := p.src[p.pos]
	switch c {
	case '(':
		return p.parseGroup()
	case '[':
		cls, err := p.parseBracket()
		if err != nil {
			return nil, err
		}
		return &reNode{kind: kClass, cls: cls}, nil
	case '.':
		p.pos++
		return &reNode{kind: kClass, cls: &runeClass{neg: true, ranges: []rune{'\n', '\n'}}}, nil
	case '^', '$':
		return nil, p.errorf("anchor %q is not supported", string(c))
	case '*', '+', '?':
		return nil, p.errorf("quantifier %q has nothing to repeat", string(c))
	case '\\':
		cls, err := p.parseEscape(false)
		if err != nil {
			return nil, err
		}
		return &reNode{kind: kClass, cls: cls}, nil
	}
	r, size := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += size
	return &reNode{kind: kClass, cls: p.literal(r)}, nil
}

func (p *reParser) literal(r rune) *runeClass {
	return &runeClass{ranges: []rune{r, r}, fold: p.fold}
}

func (p *reParser) parseGroup() (*reNode, error) {
	p.pos++ // '('
	rest := p.src[p.pos:]
	saved := p.fold
	var look, neg bool
	switch {
	case strings.HasPrefix(rest, "?:"):
		p.pos += 2
	case strings.HasPrefix(rest, "?="):
		p.pos += 2
		look = true
	case strings.HasPrefix(rest, "?!"):
		p.pos += 2
		look, neg = true, true
	case strings.HasPrefix(rest, "?<=") || strings.HasPrefix(rest, "?<!"):
		return nil, p.errorf("lookbehind is not supported")
	case strings.HasPrefix(rest, "?"):
		// Flags: (?i) or (?i:...), also (?-i...).
		i := 1
		on := true
		fold := p.fold
		for ; i < len(rest); i++ {
			switch rest[i] {
			case 'i':
				fold = on
				continue
			case '-':
				on = false
				continue
			}
			break
		}
		if i >= len(rest) || (rest[i] != ':' && rest[i] != ')') || i == 1 {
			return nil, p.errorf("group syntax (%s is not supported", rest[:min(i+1, len(rest))])
		}
		p.pos += i + 1
		if rest[i] == ')' {
			p.fold = fold // applies to the end of the enclosing group
			return nil, nil
		}
		p.fold = fold
	}
	n, err := p.parseAlt()
	p.fold = saved
	if err != nil {
		return nil, err
	}
	if p.pos >= len(p.src) || p.src[p.pos] != ')' {
		return nil, p.errorf("missing ')'")
	}
	p.pos++
	if look {
		return &reNode{kind: kLook, subs: []*reNode{n}, neg: neg}, nil
	}
	return n, nil
}

// parseBracket reads a [...] class.
func (p *reParser) parseBracket() (*runeClass, error) {
	start := p.pos
	p.pos++ // '['
	cls := &runeClass{fold: p.fold}
	if p.pos < len(p.src) && p.src[p.pos] == '^' {
		cls.neg = true
		p.pos++
	}
	first := true
	for {
		if p.pos >= len(p.src) {
			p.pos = start
			return nil, p.errorf("missing ']'")
		}
		c := p.src[p.pos]
		if c == ']' && !first {
			p.pos++
			return cls, nil
		}
		first = false
		if c == '[' {
			if strings.HasPrefix(p.src[p.pos:], "[:") {
				return nil, p.errorf("POSIX classes are not supported")
			}
			return nil, p.errorf("nested classes are not supported")
		}
		var lo rune
		if c == '\\' {
			sub, err := p.parseEscape(true)
			if err != nil {
				return nil, err
			}
			if len(sub.tables) > 0 || sub.neg || sub.ranges[0] != sub.ranges[1] {
				if sub.neg { // \S, \D, \W, \P{..} inside a class
					for _, t := range sub.tables {
						cls.tables = append(cls.tables, classTable{tab: t.tab, neg: !t.neg})
					}
				} else {
					cls.tables = append(cls.tables, sub.tables...)
					cls.ranges = append(cls.ranges, sub.ranges...)
				}
				continue
			}
			lo = sub.ranges[0]
		} else {
			r, size := utf8.DecodeRuneInString(p.src[p.pos:])
			p.pos += size
			lo = r
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if p.src[p.pos] == '\\' {
				sub, err := p.parseEscape(true)
				if err != nil {
					return nil, err
				}
				if len(sub.tables) > 0 || sub.neg {
					return nil, p.errorf("a class escape cannot end a range")
				}
				hi = sub.ranges[0]
			} else {
				r, size := utf8.DecodeRuneInString(p.src[p.pos:])
				p.pos += size
				hi = r
			}
			if hi < lo {
				return nil, p.errorf("range %q-%q is reversed", lo, hi)
			}
		}
		cls.ranges = append(cls.ranges, lo, hi)
	}
}

// parseEscape reads an escape at p.pos ('\\'). Single runes come back as a one-rune range.
func (p *reParser) parseEscape(inClass bool) (*runeClass, error) {
	if p.pos+1 >= len(p.src) {
		return nil, p.errorf("trailing backslash")
	}
	p.pos++
	c := p.src[p.pos]
	p.pos++
	one := func(r rune) (*runeClass, error) { return p.literal(r), nil }
	table := func(t *unicode.RangeTable, neg bool) (*runeClass, error) {
		return &runeClass{neg: neg, fold: p.fold, tables: []classTable{{tab: t}}}, nil
	}
	switch c {
	case 's':
		return table(unicode.White_Space, false)
	case 'S':
		return table(unicode.White_Space, true)
	case 'd':
		return table(unicode.Nd, false)
	case 'D':
		return table(unicode.Nd, true)
	case 'w':
		return table(nil, false)
	case 'W':
		return table(nil, true)
	case 'p', 'P':
		t, neg, err := p.property(c == 'P')
		if err != nil {
			return nil, err
		}
		return table(t, neg)
	case 'n':
		return one('\n')
	case 'r':
		return one('\r')
	case 't':
		return one('\t')
	case 'f':
		return one('\f')
	case 'v':
		return one('\v')
	case 'e':
		return one(0x1b)
	case 'a':
		return one(0x07)
	case '0':
		return one(0)
	case 'x', 'u':
		return p.hexEscape(c)
	case 'b':
		if inClass {
			return one('\b')
		}
		return nil, p.errorf("word boundary \\b is not supported")
	}
	if c < utf8.RuneSelf && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '1' && c <= '9') {
		return nil, p.errorf("escape \\%c is not supported", c)
	}
	p.pos--
	r, size := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += size
	return one(r)
}

// property reads the name of a \p{...} or \pL escape after its letter and finds its table: a
// general category, a script or a property. neg is the escape's negation (\P, or ^ inside the
// braces).
func (p *reParser) property(neg bool) (*unicode.RangeTable, bool, error) {
	name, err := p.propertyName()
	if err != nil {
		return nil, false, err
	}
	if strings.HasPrefix(name, "^") {
		name, neg = name[1:], !neg
	}
	t := unicode.Categories[name]
	if t == nil {
		t = unicode.Scripts[name]
	}
	if t == nil {
		t = unicode.Properties[name]
	}
	if t == nil {
		return nil, false, p.errorf("unknown Unicode property %q", name)
	}
	return t, neg, nil
}

// hexEscape reads the digits of \xHH, \x{H...} or \uHHHH after the escape letter c.
func (p *reParser) hexEscape(c byte) (*runeClass, error) {
	if c == 'u' {
		if p.pos+4 > len(p.src) {
			return nil, p.errorf("short \\u escape")
		}
		p.pos += 4
		return p.hexRune(p.src[p.pos-4 : p.pos])
	}
	if p.pos < len(p.src) && p.src[p.pos] == '{' {
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 0 {
			return nil, p.errorf("missing '}' in \\x{...}")
		}
		h := p.src[p.pos+1 : p.pos+end]
		p.pos += end + 1
		return p.hexRune(h)
	}
	if p.pos+2 > len(p.src) {
		return nil, p.errorf("short \\x escape")
	}
	p.pos += 2
	return p.hexRune(p.src[p.pos-2 : p.pos])
}

// hexRune parses the hex digits of an escape.
func (p *reParser) hexRune(h string) (*runeClass, error) {
	v, err := strconv.ParseUint(h, 16, 32)
	if err != nil || v > unicode.MaxRune {
		return nil, p.errorf("bad hex escape %q", h)
	}
	return p.literal(rune(v)), nil
}

func (p *reParser) propertyName() (string, error) {
	if p.pos >= len(p.src) {
		return "", p.errorf("missing property name")
	}
	if p.src[p.pos] != '{' {
		r, size := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += size
		return string(r), nil
	}
	end := strings.IndexByte(p.src[p.pos:], '}')
	if end < 0 {
		return "", p.errorf("missing '}' in property")
	}
	name := p.src[p.pos+1 : p.pos+end]
	p.pos += end + 1
	return name, nil
}

type reCompiler struct{ insts []reInst }

func (c *reCompiler) emit(n *reNode) error {
	if len(c.insts) > maxRegexInsts {
		return fmt.Errorf("pattern too large after expanding repeats (over %d instructions)", maxRegexInsts)
	}
	switch n.kind {
	case kEmpty:
	case kClass:
		n.cls.prepare()
		c.insts = append(c.insts, reInst{op: opClass, cls: n.cls})
	case kConcat:
		for _, s := range n.subs {
			if err := c.emit(s); err != nil {
				return err
			}
		}
	case kAlt:
		var jumps []int
		for i, s := range n.subs {
			if i < len(n.subs)-1 {
				split := len(c.insts)
				c.insts = append(c.insts, reInst{op: opSplit, x: split + 1})
				if err := c.emit(s); err != nil {
					return err
				}
				jumps = append(jumps, len(c.insts))
				c.insts = append(c.insts, reInst{op: opJmp})
				c.insts[split].y = len(c.insts)
				continue
			}
			if err := c.emit(s); err != nil {
				return err
			}
		}
		for _, j := range jumps {
			c.insts[j].x = len(c.insts)
		}
	case kRepeat:
		sub := n.subs[0]
		for i := 0; i < n.min; i++ {
			if err := c.emit(sub); err != nil {
				return err
			}
		}
		if n.max < 0 {
			// L: split body, out; body; jmp L
			loop := len(c.insts)
			c.insts = append(c.insts, reInst{op: opSplit})
			if err := c.emit(sub); err != nil {
				return err
			}
			c.insts = append(c.insts, reInst{op: opJmp, x: loop})
			c.setSplit(loop, loop+1, len(c.insts), n.lazy)
			return nil
		}
		// Nested optional copies: (x(x(x)?)?)?
		var splits []int
		for i := n.min; i < n.max; i++ {
			splits = append(splits, len(c.insts))
			c.insts = append(c.insts, reInst{op: opSplit})
			if err := c.emit(sub); err != nil {
				return err
			}
		}
		for _, s := range splits {
			c.setSplit(s, s+1, len(c.insts), n.lazy)
		}
	case kLook:
		sc := &reCompiler{}
		if err := sc.emit(n.subs[0]); err != nil {
			return err
		}
		sc.insts = append(sc.insts, reInst{op: opMatch})
		c.insts = append(c.insts, reInst{op: opLook, neg: n.neg, look: &regex{insts: sc.insts}})
	}
	return nil
}

// setSplit points the split at pc to body and out, preferring body unless lazy.
func (c *reCompiler) setSplit(pc, body, out int, lazy bool) {
	if lazy {
		body, out = out, body
	}
	c.insts[pc].x, c.insts[pc].y = body, out
}
