package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// english1K is the first KB of testdata/english.txt, cut at a rune boundary.
func english1K(b *testing.B) string {
	data, err := os.ReadFile("testdata/english.txt")
	if err != nil {
		b.Fatal(err)
	}
	n := 1024
	for !utf8.RuneStart(data[n]) {
		n--
	}
	return string(data[:n])
}

// benchTokenizers lists the tokenizers to benchmark: the package's own, the hand-made
// fixtures, and real tokenizer.json files when LLMBENCH_HF_GOLDEN names a folder of them.
func benchTokenizers(b *testing.B) map[string]Tokenizer {
	toks := map[string]Tokenizer{
		"reference":          Reference{},
		"approx":             Approx{},
		"fixture-bytelevel":  loadFixture(b, "bytelevel"),
		"fixture-sentencepc": loadFixture(b, "sentencepiece"),
	}
	if dir := os.Getenv("LLMBENCH_HF_GOLDEN"); dir != "" {
		files, _ := filepath.Glob(filepath.Join(dir, "*.tokenizer.json"))
		for _, path := range files {
			h, err := LoadHF(path)
			if err != nil {
				b.Fatal(err)
			}
			toks[strings.TrimSuffix(filepath.Base(path), ".tokenizer.json")] = h
		}
	}
	return toks
}

// BenchmarkCount1KB counts one KB of English prose; HF tokenizers run with a warm word
// cache, as in a long run.
func BenchmarkCount1KB(b *testing.B) {
	text := english1K(b)
	for name, tok := range benchTokenizers(b) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				tok.Count(text)
			}
		})
	}
}

// BenchmarkCount1KBCold counts one KB with an empty word cache each time.
func BenchmarkCount1KBCold(b *testing.B) {
	text := english1K(b)
	for name, tok := range benchTokenizers(b) {
		h, ok := tok.(*HF)
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				h.resetCache()
				h.Count(text)
			}
		})
	}
}

// BenchmarkLoadHF parses tokenizer.json files: the fixture, and real ones when
// LLMBENCH_HF_GOLDEN is set.
func BenchmarkLoadHF(b *testing.B) {
	paths := []string{"testdata/bytelevel.tokenizer.json"}
	if dir := os.Getenv("LLMBENCH_HF_GOLDEN"); dir != "" {
		files, _ := filepath.Glob(filepath.Join(dir, "*.tokenizer.json"))
		paths = append(paths, files...)
	}
	for _, path := range paths {
		b.Run(strings.TrimSuffix(filepath.Base(path), ".tokenizer.json"), func(b *testing.B) {
			for b.Loop() {
				if _, err := LoadHF(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSplitPattern1KB splits one KB of English prose with Llama 3's pre-tokenizer
// pattern: the package's matcher against regexp2 (the library it replaces; test-only here).
func BenchmarkSplitPattern1KB(b *testing.B) {
	text := english1K(b)
	pattern := knownPatterns["llama3"]
	mine, err := compileRegex(pattern)
	if err != nil {
		b.Fatal(err)
	}
	net := regexp2.MustCompile(pattern)
	b.Run("own", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		var buf [][2]int
		for b.Loop() {
			buf = mine.findAll(text, buf[:0])
		}
	})
	b.Run("regexp2", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			m, err := net.FindStringMatch(text)
			for ; m != nil && err == nil; m, err = net.FindNextMatch(m) {
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
