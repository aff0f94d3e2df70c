package refengine

import (
	"encoding/binary"
	"hash/fnv"
	"testing"
)

// TestFNVMatchesHashFNV checks hashString and hashUint (a uint64 folded as its 8 bytes, least
// significant first) against the standard library's FNV-1a, chained as the engine chains them.
func TestFNVMatchesHashFNV(t *testing.T) {
	lib := fnv.New64a()
	h := uint64(fnvOffset)
	if h != lib.Sum64() {
		t.Fatalf("offset %x, hash/fnv %x", h, lib.Sum64())
	}
	var b [8]byte
	for _, step := range []struct {
		s string
		v uint64
	}{{"user", 0}, {"Hello there", 1}, {"", 1 << 63}, {"ünï", 0xdeadbeefcafe}} {
		h = hashString(h, step.s)
		lib.Write([]byte(step.s))
		h = hashUint(h, step.v)
		binary.LittleEndian.PutUint64(b[:], step.v)
		lib.Write(b[:])
		if h != lib.Sum64() {
			t.Fatalf("after %+v: %x, hash/fnv %x", step, h, lib.Sum64())
		}
	}
}
