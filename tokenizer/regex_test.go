package tokenizer

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// Split patterns of well-known tokenizer.json files.
var knownPatterns = map[string]string{
	"gpt2":   gpt2Pattern,
	"llama3": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	"qwen2":  `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	"o200k":  `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
}

func pieces(re *regex, s string) []string {
	var out []string
	for _, m := range re.findAll(s, nil) {
		out = append(out, s[m[0]:m[1]])
	}
	return out
}

func TestRegexKnownPatterns(t *testing.T) {
	tests := []struct {
		pattern, text string
		want          []string
	}{
		{"gpt2", "Hello world's  end\n\n 42!", []string{"Hello", " world", "'s", " ", " end", "\n\n", " 42", "!"}},
		{"gpt2", "a   ", []string{"a", "   "}},
		{"llama3", "I'M 12345 héllo\t\tx", []string{"I", "'M", " ", "123", "45", " héllo", "\t", "\tx"}},
		{"llama3", "x  \n\ny", []string{"x", "  \n\n", "y"}},
		{"llama3", "...\n\nend", []string{"...\n\n", "end"}},
		{"qwen2", "2024", []string{"2", "0", "2", "4"}},
		{"o200k", "HelloWorld's path/to\n", []string{"Hello", "World's", " path", "/to", "\n"}},
		{"o200k", "a//\nb", []string{"a", "//\n", "b"}},
	}
	for _, tt := range tests {
		re, err := compileRegex(knownPatterns[tt.pattern])
		if err != nil {
			t.Fatal(err)
		}
		if got := pieces(re, tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("%s(%q) = %q, want %q", tt.pattern, tt.text, got, tt.want)
		}
	}
}

func TestRegexSyntax(t *testing.T) {
	tests := []struct {
		pattern, text string
		want          []string
	}{
		{`a{2,3}`, "aaaaaaa", []string{"aaa", "aaa"}},
		{`a{2}`, "aaaaa", []string{"aa", "aa"}},
		{`a{2,}`, "aaaaa a", []string{"aaaaa"}},
		{`a+?b`, "aaab", []string{"aaab"}},
		{`a+?`, "aaa", []string{"a", "a", "a"}},
		{`(?i)ab`, "AB ab aB", []string{"AB", "ab", "aB"}},
		{`(?i:k)`, "K\u212A", []string{"K", "\u212A"}}, // Kelvin sign folds to k
		{`x(?=y)`, "xy xz", []string{"x"}},
		{`[a-c\d]+`, "abc123d٣", []string{"abc123", "٣"}},
		{`[^\S\n]+`, "a \t\nb", []string{" \t"}},
		{`\w+`, "héllo_1 wörld", []string{"héllo_1", "wörld"}},
		{`\x41\x{42}\u0043`, "ABC", []string{"ABC"}},
		{`\p{Han}+`, "a漢字b", []string{"漢字"}},
		{`\PL+`, "ab12!c", []string{"12!"}},
		{`[\p{Lu}]`, "aBc", []string{"B"}},
		{`.`, "a\nb", []string{"a", "b"}},
		{`a|ab`, "ab", []string{"a"}}, // leftmost-first, as Oniguruma
		{`\.\*`, "a.*b", []string{".*"}},
		{`x{,2}`, "x{,2}", []string{"x{,2}"}}, // not a quantifier: a literal brace
	}
	for _, tt := range tests {
		re, err := compileRegex(tt.pattern)
		if err != nil {
			t.Errorf("%s: %v", tt.pattern, err)
			continue
		}
		if got := pieces(re, tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("%s on %q = %q, want %q", tt.pattern, tt.text, got, tt.want)
		}
	}
}

func TestRegexErrors(t *testing.T) {
	for pattern, want := range map[string]string{
		`(?<!a)b`:     "lookbehind",
		`^a`:          "anchor",
		`a$`:          "anchor",
		`(a)\1`:       `\1`,
		`a++`:         "possessive",
		`[[:alpha:]]`: "POSIX",
		`(a`:          "missing ')'",
		`[a`:          "missing ']'",
		`a)`:          "unexpected",
		`*a`:          "nothing to repeat",
		`\p{Nope}`:    "unknown Unicode property",
		`a{3,2}`:      "reversed",
		`a{2000}`:     "over 1000",
		`(?x:a)`:      "not supported",
		`\bword`:      "word boundary",
		`[z-a]`:       "reversed",
		`a\`:          "trailing backslash",
	} {
		_, err := compileRegex(pattern)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("compileRegex(%q) err = %v, want it to mention %q", pattern, err, want)
		}
	}
}

func TestRegexPathological(t *testing.T) {
	// Nested quantifiers would backtrack exponentially; the memoized rerun keeps them
	// polynomial, and empty loops terminate.
	for _, pattern := range []string{`(a*)*b`, `(a|a)*b`, `(a+)+b`, `(a?){20}a{20}b`, `(?:a?)*x`} {
		re, err := compileRegex(pattern)
		if err != nil {
			t.Fatal(err)
		}
		if m := re.findAll(strings.Repeat("a", 40), nil); len(m) != 0 {
			t.Errorf("%s matched %v", pattern, m)
		}
	}
}

// goSpace is Go's regexp \s; the matcher's \s is Unicode White_Space. Differential tests skip
// inputs where the two differ.
func onlyGoSpaces(s string) bool {
	for _, r := range s {
		if unicode.IsSpace(r) && !strings.ContainsRune("\t\n\f\r ", r) {
			return false
		}
	}
	return true
}

// oracleSplit splits with Go's regexp, emulating the final `\s+(?!\S)|\s+` of a pattern by a
// capture group `(\s+)` whose match gives back its last rune when a non-space follows.
func oracleSplit(re *regexp.Regexp, s string) []string {
	var out []string
	for pos := 0; pos < len(s); {
		loc := re.FindStringSubmatchIndex(s[pos:])
		if loc == nil {
			break
		}
		start, end := pos+loc[0], pos+loc[1]
		if loc[len(loc)-2] >= 0 && end < len(s) && utf8.RuneCountInString(s[start:end]) > 1 {
			_, size := utf8.DecodeLastRuneInString(s[start:end])
			end -= size
		}
		out = append(out, s[start:end])
		pos = end
	}
	return out
}

var fuzzSeeds = []string{
	"Hello world's  end\n\n 42!", "I'M 12345 héllo\t\tx", "x  \n\ny", "...\n\nend", "  \r\n \n a",
	"HelloWorld's path/to\n", "漢字 かな 한국어 😀👍🏽", "tab\there  ", "'LL'll'S", "a\xffb \xfe", "1,234.56%",
}

// lookaheadPatterns use lookahead beyond the known patterns' final `\s+(?!\S)|\s+`; only
// regexp2 can check them.
var lookaheadPatterns = []string{
	`\s+(?!\S)|\s+`, `a(?=b)|.`, `(?!ab)..|.`, `[^\S\n]{2,}?(?=x)|\S+|\s`, `\p{L}+(?=\p{N})|\p{N}+(?![a-z])|.`,
}

// regexp2Split splits s with regexp2 (.NET semantics: leftmost-first backtracking with
// lookahead, like Oniguruma), giving the non-empty matches as pieces of s.
func regexp2Split(re *regexp2.Regexp, s string) ([]string, error) {
	var out []string
	m, err := re.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		if i, n := m.ByteRange(); n > 0 {
			out = append(out, s[i:i+n])
		}
	}
	return out, err
}

// regexp2Comparable reports whether s avoids the runes where .NET's case-insensitive matching
// differs from Unicode simple case folding (which the package's matcher, Go's regexp and
// Oniguruma use): the long s and the Kelvin and Ångström signs, which fold to s, k and å.
func regexp2Comparable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsAny(s, "\u017f\u212a\u212b")
}

// FuzzSplitPatternsVsOracles splits text with the known tokenizer patterns and the lookahead
// patterns, and checks the pieces against two oracles: regexp2 (github.com/dlclark/regexp2,
// test-only), which runs the patterns as written, lookahead included; and Go's regexp, which
// cannot express lookahead, so the final `\s+(?!\S)|\s+` is emulated (oracleSplit) and only
// texts whose spaces Go's \s knows are compared.
func FuzzSplitPatternsVsOracles(f *testing.F) {
	type triple struct {
		mine *regex
		std  *regexp.Regexp // nil: no stdlib emulation for this pattern
		net  *regexp2.Regexp
	}
	var all []triple
	for name, p := range knownPatterns {
		mine, err := compileRegex(p)
		if err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		std := regexp.MustCompile(strings.TrimSuffix(p, `\s+(?!\S)|\s+`) + `(\s+)`)
		all = append(all, triple{mine, std, regexp2.MustCompile(p)})
	}
	for _, p := range lookaheadPatterns {
		mine, err := compileRegex(p)
		if err != nil {
			f.Fatalf("%s: %v", p, err)
		}
		all = append(all, triple{mine, nil, regexp2.MustCompile(p)})
	}
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range all {
			got := pieces(p.mine, s)
			if regexp2Comparable(s) {
				want, err := regexp2Split(p.net, s)
				if err != nil {
					t.Fatalf("regexp2 %s on %q: %v", p.mine.src, s, err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s on %q:\n got %q\nwant %q (regexp2)", p.mine.src, s, got, want)
				}
			}
			if p.std != nil && onlyGoSpaces(s) {
				if want := oracleSplit(p.std, s); !slices.Equal(got, want) {
					t.Fatalf("%s on %q:\n got %q\nwant %q (Go regexp)", p.mine.src, s, got, want)
				}
				if strings.Join(got, "") != s {
					t.Fatalf("%s on %q: pieces do not cover the text: %q", p.mine.src, s, got)
				}
			}
		}
	})
}

func FuzzRegexVsStdlib(f *testing.F) {
	patterns := []string{
		`[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}`, `(?i:ab|a)c?`, `[a-f]+?x|[a-f]{2,4}`, `(?:ab|a)(?:bc|c)*`,
		`\S+`, `[^\s\p{L}]+[\r\n]*`, `x*y|x+`, `(?i)[a-z]{2}`, `.+`, `\p{Lu}\p{Ll}*`, `b*|a+`, `(?:x|)y|z|é+`,
	}
	type pair struct {
		mine *regex
		std  *regexp.Regexp
	}
	var pairs []pair
	for _, p := range patterns {
		mine, err := compileRegex(p)
		if err != nil {
			f.Fatalf("%s: %v", p, err)
		}
		pairs = append(pairs, pair{mine, regexp.MustCompile(p)})
	}
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !onlyGoSpaces(s) {
			return
		}
		for _, p := range pairs {
			var want [][2]int
			for _, m := range p.std.FindAllStringIndex(s, -1) {
				if m[1] > m[0] {
					want = append(want, [2]int{m[0], m[1]})
				}
			}
			if got := p.mine.findAll(s, nil); !slices.Equal(got, want) {
				t.Fatalf("%s on %q:\n got %v\nwant %v", p.mine.src, s, got, want)
			}
		}
	})
}

func FuzzCompileRegex(f *testing.F) {
	for _, p := range knownPatterns {
		f.Add(p, "Hello world's  end\n\n 42!")
	}
	f.Add(`(a*)*b|[^\S\n]{2,}?(?=x)`, "aaa  x")
	f.Add(`\x{1F600}|\u00e9|[\p{Han}\d-]+`, "😀é漢-1")
	f.Fuzz(func(t *testing.T, pattern, text string) {
		if len(pattern) > 200 || len(text) > 200 {
			return
		}
		re, err := compileRegex(pattern)
		if err != nil {
			return
		}
		last := 0
		for _, m := range re.findAll(text, nil) {
			if m[0] < last || m[1] <= m[0] || m[1] > len(text) {
				t.Fatalf("%q on %q: bad match %v after %d", pattern, text, m, last)
			}
			last = m[1]
		}
	})
}
