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
