package usecase

import "testing"

// TestShellQuote: plain paths stay as they are; anything else is single-quoted so that the
// hint can be pasted into a shell.
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"results/20261204-120000": "results/20261204-120000",
		"my results":              "'my results'",
		"it's":                    `'it'\''s'`,
		"":                        "''",
		"a;rm -rf x":              "'a;rm -rf x'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
