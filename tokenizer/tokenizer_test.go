package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

func TestReferencePieces(t *testing.T) {
	var ref Reference
	tests := []struct {
		text string
		want []string
	}{
		{"hello world", []string{"hello", " world"}},
		{" a,b", []string{" a", ",", "b"}},
		// Rule 2: one digit per token, with an optional leading space.
		{" 42", []string{" 4", "2"}},
		// Rule 3: one other rune, leading space included.
		{" ,!", []string{" ,", "!"}},
		{"é", []string{"é"}},
		{" é", []string{" é"}},
		{"naïve", []string{"na", "ï", "ve"}},
		// Rule 4: whitespace runs; a single trailing space before a non-space joins it.
		{"\n", []string{"\n"}},
		{"  word", []string{" ", " word"}},
		{"a\n b", []string{"a", "\n", " b"}},
		{"a \t b", []string{"a", " \t", " b"}},
		{"a\t b", []string{"a", "\t", " b"}},
		{"a\tb", []string{"a", "\t", "b"}},
		{"a  ", []string{"a", "  "}},
		{"a ", []string{"a", " "}},
		{" ", []string{" "}},
		{"\r\n\r\n", []string{"\r\n\r\n"}},
		// Invalid UTF-8 bytes are one token each.
		{"\xff\xfe", []string{"\xff", "\xfe"}},
		{" \xff", []string{" \xff"}},
		{"", nil},
	}
	for _, tt := range tests {
		got := ref.Pieces(tt.text)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Pieces(%q) = %q, want %q", tt.text, got, tt.want)
		}
		if c := ref.Count(tt.text); c != len(tt.want) {
			t.Errorf("Count(%q) = %d, want %d", tt.text, c, len(tt.want))
		}
		ids := ref.Encode(tt.text)
		if len(ids) != len(tt.want) {
			t.Errorf("len(Encode(%q)) = %d, want %d", tt.text, len(ids), len(tt.want))
		}
		for i, id := range ids {
			if id != pieceID(tt.want[i]) || id < 0 || id >= VocabSize {
				t.Errorf("Encode(%q)[%d] = %d, want FNV id %d of %q", tt.text, i, id, pieceID(tt.want[i]), tt.want[i])
			}
		}
	}
	if got := ref.Count("hello world"); got != 2 {
		t.Errorf(`Count("hello world") = %d, want 2`, got)
	}
	if ref.Name() != "reference" {
		t.Errorf("Name = %q", ref.Name())
	}
}

func TestReferenceIDsStable(t *testing.T) {
	// 64-bit FNV-1a of "hello" is 0xa430d84680aabd0b; modulo 128256 that is 41245.
	if got := pieceID("hello"); got != int(uint64(0xa430d84680aabd0b)%VocabSize) {
		t.Errorf("pieceID(hello) = %d", got)
	}
	a, b := Reference{}.Encode("the same text"), Reference{}.Encode("the same text")
	if !slices.Equal(a, b) {
		t.Error("Encode is not deterministic")
	}
}

func TestWordIsOneToken(t *testing.T) {
	var ref Reference
	seen := make(map[string]bool, WordCount)
	for k := uint64(0); k < WordCount; k++ {
		w := Word(k)
		if ref.Count(w) != 1 {
			t.Fatalf("Word(%d) = %q is %d tokens", k, w, ref.Count(w))
		}
		if !strings.HasPrefix(w, " ") {
			t.Fatalf("Word(%d) = %q lacks its leading space", k, w)
		}
		if seen[w] {
			t.Fatalf("Word(%d) = %q repeats an earlier word", k, w)
		}
		seen[w] = true
	}
	if Word(WordCount+7) != Word(7) {
		t.Error("Word does not take k modulo WordCount")
	}
}

func TestTextTokenCount(t *testing.T) {
	var ref Reference
	for _, seed := range []uint64{0, 1, 42, 1 << 63} {
		for n := 0; n <= 300; n++ {
			if got := ref.Count(Text(seed, 0, n)); got != n {
				t.Fatalf("Count(Text(%d, 0, %d)) = %d", seed, n, got)
			}
		}
		for _, n := range []int{1000, 4096, 10000} {
			if got := ref.Count(Text(seed, 17, n)); got != n {
				t.Fatalf("Count(Text(%d, 17, %d)) = %d", seed, n, got)
			}
		}
	}
	if Text(1, 0, -3) != "" {
		t.Error("Text with n < 0 should be empty")
	}
}

func TestTextPrefix(t *testing.T) {
	for _, seed := range []uint64{3, 99} {
		full := Text(seed, 0, 500)
		for _, a := range []int{0, 1, 7, 250, 499, 500} {
			if got := Text(seed, 0, a) + Text(seed, a, 500-a); got != full {
				t.Fatalf("seed %d: Text(0,%d)+Text(%d,%d) != Text(0,500)", seed, a, a, 500-a)
			}
			if !strings.HasPrefix(full, Text(seed, 0, a)) {
				t.Fatalf("seed %d: Text(0,%d) is not a prefix", seed, a)
			}
		}
	}
	if Text(1, 0, 50) == Text(2, 0, 50) {
		t.Error("different seeds give the same text")
	}
	// Not a single repeated token: 50 words drawn from 90,000 are nearly all distinct.
	distinct := map[string]bool{}
	for _, w := range (Reference{}).Pieces(Text(5, 0, 50)) {
		distinct[w] = true
	}
	if len(distinct) < 45 {
		t.Errorf("Text(5, 0, 50) has only %d distinct words", len(distinct))
	}
}

func TestReferenceAdditiveAtWordBoundaries(t *testing.T) {
	// Counts add up when the second text starts with a space followed by a non-space, which
	// is how the engine's words are built.
	var ref Reference
	parts := []string{"hello", " world", ",", " 42", "\n", " é", "x\t", " y", "  ", " z!"}
	for _, a := range parts {
		for _, b := range parts {
			if len(b) < 2 || b[0] != ' ' || b[1] == ' ' {
				continue
			}
			if ref.Count(a+b) != ref.Count(a)+ref.Count(b) {
				t.Errorf("Count(%q+%q) = %d, want %d+%d", a, b, ref.Count(a+b), ref.Count(a), ref.Count(b))
			}
		}
	}
}

func TestMix(t *testing.T) {
	// splitmix64's finalizer with its increment: Mix(0) is a known constant.
	if got := Mix(0); got != 0xe220a8397b1dcdaf {
		t.Errorf("Mix(0) = %#x", got)
	}
}

func FuzzReference(f *testing.F) {
	for _, s := range []string{"hello world", " a,b", "  word\n\t x", "\xff é 12", Text(1, 0, 20)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var ref Reference
		ps := ref.Pieces(s)
		if ref.Count(s) != len(ps) {
			t.Fatalf("Count(%q) = %d, len(Pieces) = %d", s, ref.Count(s), len(ps))
		}
		if len(ref.Encode(s)) != len(ps) {
			t.Fatalf("len(Encode(%q)) = %d, want %d", s, len(ref.Encode(s)), len(ps))
		}
		if strings.Join(ps, "") != s {
			t.Fatalf("pieces of %q do not concatenate back: %q", s, ps)
		}
		for _, p := range ps {
			if p == "" {
				t.Fatalf("empty piece in %q", ps)
			}
		}
	})
}
