package loadgen

import (
	"hash/fnv"
	"testing"
)

// TestFNVMatchesHashFNV checks the hand-written FNV-1a against the standard library's, fed in
// the same pieces (the output hash is folded chunk by chunk).
func TestFNVMatchesHashFNV(t *testing.T) {
	for _, pieces := range [][]string{
		nil,
		{""},
		{"a"},
		{"Hello", ",", " world", "!"},
		{"\x00\xff", "ünïcödé", "\n\r\t"},
	} {
		lib := fnv.New64a()
		h := uint64(fnvOffset)
		for _, p := range pieces {
			lib.Write([]byte(p))
			h = fnvAdd(h, []byte(p))
		}
		if h != lib.Sum64() {
			t.Errorf("%q: fnvAdd %x, hash/fnv %x", pieces, h, lib.Sum64())
		}
		if got, want := hashString(h), lib.Sum(nil); got != hexOf(want) {
			t.Errorf("%q: hex %s, want %s", pieces, got, hexOf(want))
		}
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
