package main

import (
	"encoding/json"
	"io"
	"strconv"
)

func writeJSONTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// clip shortens a value quoted in an error message to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
