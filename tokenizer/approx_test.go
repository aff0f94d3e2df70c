package tokenizer

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestApproxCount(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		// Nine letters per token: "internationalization" has 20 letters.
		{"internationalization", 3},
		{" internationalization", 3},
		// Digits by three, symbols by two, leading spaces free.
		{"1234567", 3},
		{" 2024", 2},
		{"...", 2},
		{" !", 1},
		{"a, b.", 4},
		// Whitespace that does not lead a piece: eight runes per token.
		{"\n", 1},
		{"a\n\nb", 3},
		{"x" + strings.Repeat(" ", 9) + "y", 3}, // x, 8 spaces, " y"
		// Ideographs: one token each, a leading space included.
		{"漢字", 2},
		{" 漢", 1},
		{"héllo", 1},
		{"naïve café", 2},
		{"🙂🙂🙂", 2},
	}
	var a Approx
	for _, tt := range tests {
		if got := a.Count(tt.text); got != tt.want {
			t.Errorf("Count(%q) = %d, want %d", tt.text, got, tt.want)
		}
		if got := len(a.Encode(tt.text)); got != tt.want {
			t.Errorf("len(Encode(%q)) = %d, want %d", tt.text, got, tt.want)
		}
	}
	if a.Name() != "approx" {
		t.Errorf("Name = %q", a.Name())
	}
}

// Exact counts of testdata/english.txt from the Hugging Face tokenizers library, recorded
// when Approx's weights were chosen (see the Approx doc).
const (
	englishLlama3Tokens = 577
	englishQwen3Tokens  = 579
	englishLlama2Tokens = 632
)

func TestApproxErrorOnEnglish(t *testing.T) {
	data, err := os.ReadFile("testdata/english.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := Approx{}.Count(string(data))
	if got != 593 {
		t.Errorf("Count(english.txt) = %d, want 593 (the figure the doc's error table was measured with)", got)
	}
	for name, real := range map[string]int{"llama3": englishLlama3Tokens, "qwen3": englishQwen3Tokens} {
		if e := float64(got-real) / float64(real); e < -0.05 || e > 0.05 {
			t.Errorf("%s: error %+.1f%%, want within 5%%", name, e*100)
		}
	}
	if e := float64(got-englishLlama2Tokens) / englishLlama2Tokens; e < -0.10 || e > 0 {
		t.Errorf("llama2: error %+.1f%%, want the documented underestimate within 10%%", e*100)
	}
}

func TestApproxStreamedChunks(t *testing.T) {
	// A stream cut at word starts counts exactly like the whole text.
	text := "The train was late again, so Maria bought 2 coffees.\n\nShe waited."
	chunks := []string{"The", " train", " was", " late", " again", ",", " so", " Maria", " bought", " 2", " coffees", ".\n\n", "She", " waited", "."}
	if strings.Join(chunks, "") != text {
		t.Fatal("chunks do not make the text")
	}
	sum := 0
	for _, c := range chunks {
		sum += Approx{}.Count(c)
	}
	if whole := (Approx{}).Count(text); sum != whole {
		t.Errorf("sum of chunk counts = %d, whole text = %d", sum, whole)
	}
}

func FuzzApprox(f *testing.F) {
	for _, s := range []string{"hello world", "a  b\n\n c", "漢字 12345 ...!!", "\xff\xfe x", "  "} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, cut int) {
		var a Approx
		n := a.Count(s)
		if len(a.Encode(s)) != n {
			t.Fatalf("len(Encode(%q)) = %d, Count = %d", s, len(a.Encode(s)), n)
		}
		if len(s) == 0 {
			return
		}
		// Streams are cut between runes (chunks are JSON strings).
		cut = ((cut % len(s)) + len(s)) % len(s)
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if sum := a.Count(s[:cut]) + a.Count(s[cut:]); sum < n || sum > n+1 {
			t.Fatalf("Count(%q)+Count(%q) = %d, want the whole's %d or one more", s[:cut], s[cut:], sum, n)
		}
	})
}
