package safetext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBoundsAndEscapes(t *testing.T) {
	if got := Clip("héllo", 2); got != "h…" {
		t.Errorf("Clip cut inside a rune: %q", got)
	}
	if got := Quote(strings.Repeat("k", 2<<20), 10); got != `"kkkkkkkkkk…" (2097152 bytes)` {
		t.Errorf("Quote: %q", got)
	}
	if got := Escape("a\x1b[2Jb\r\n\xff", 100); got != `a\x1b[2Jb\r\n\ufffd` {
		t.Errorf("Escape: %q", got)
	}
	if got := Escape("plain é", 100); got != "plain é" {
		t.Errorf("Escape changed plain text: %q", got)
	}
}

func FuzzEscapeIsBoundedAndInert(f *testing.F) {
	f.Add("a\x1b[31m", 8)
	f.Add("\xff\u0085", 1)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = max(n%4096, 0)
		got := Escape(s, n)
		if !utf8.ValidString(got) || strings.ContainsFunc(got, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }) {
			t.Fatalf("Escape(%q) = %q", s, got)
		}
		if c := Clip(s, n); len(c) > n+len("…") {
			t.Fatalf("Clip(%d) gave %d bytes", n, len(c))
		}
	})
}
