// Package safetext bounds and escapes outside text before it is quoted in an error message, a
// record or the terminal: a hostile trace line or server reply must not print megabytes or
// move the cursor. It does no I/O.
package safetext

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Clip returns s cut to at most n bytes on a rune boundary, with "…" appended when it was
// cut. It does not escape.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Quote returns s as a Go-quoted string (control characters, invalid UTF-8 and quotes
// escaped) of at most n bytes of s, followed by the full length when s was cut:
// "abc…" (2000000 bytes).
func Quote(s string, n int) string {
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return strconv.Quote(Clip(s, n)) + " (" + strconv.Itoa(len(s)) + " bytes)"
}

// Escape returns s cut to n bytes with control characters escaped but without surrounding
// quotes, for messages that are already mostly text (a server's error message).
func Escape(s string, n int) string {
	s = Clip(s, n)
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f { // non-ASCII may hold C1 controls: check by rune
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
