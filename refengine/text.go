package refengine

import (
	"github.com/llmbench/llmbench/tokenizer"
)

// Output text rule (documented in the package doc):
//
// A request's output is tokenizer.Text(base, 0, n): token i is
// tokenizer.Word(tokenizer.Mix(base ^ tokenizer.Mix(i))), every word one reference token with a
// leading space. base is chosen once per request:
//
//   - temperature 0 (greedy):          base = Mix(promptHash)
//   - temperature > 0 with a seed:      base = Mix(promptHash ^ Mix(seed))
//   - temperature > 0 without a seed:   base = Mix(promptHash ^ r), r fresh per request
//
// so greedy output depends only on the prompt (identical across runs and with speculative
// decoding on or off), seeded sampling is reproducible, and unseeded sampling varies.

// FNV-1a 64, written by hand rather than with hash/fnv: the state is a plain uint64 threaded
// through hashString and hashUint (a message list, then token ids), which hash/fnv holds only
// as an escaping interface value, one allocation per hasher (measured in loadgen, the same
// code: BenchmarkIngest 0 -> 1 alloc/op). fnv_test.go checks both against hash/fnv.
const fnvOffset, fnvPrime = 14695981039346656037, 1099511628211

// hashString folds s into the FNV-1a hash h.
func hashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// hashUint folds v into the FNV-1a hash h, one byte at a time.
func hashUint(h, v uint64) uint64 {
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= fnvPrime
		v >>= 8
	}
	return h
}

// outputBase returns the word seed of a request's output.
func outputBase(promptHash uint64, temperature float64, seed *int64, random uint64) uint64 {
	switch {
	case temperature == 0:
		return tokenizer.Mix(promptHash)
	case seed != nil:
		return tokenizer.Mix(promptHash ^ tokenizer.Mix(uint64(*seed)))
	default:
		return tokenizer.Mix(promptHash ^ random)
	}
}

// appendOutput appends output tokens [start, start+n) of the request with word seed base.
func appendOutput(b []byte, base uint64, start, n int) []byte {
	for i := start; i < start+n; i++ {
		b = append(b, tokenizer.Word(tokenizer.Mix(base^tokenizer.Mix(uint64(i))))...)
	}
	return b
}

// OutputText returns the first n output tokens the engine streams for a request with the given
// prompt hash (see the package doc) that is greedy (temperature 0) or seeded. Unseeded sampling
// is not reproducible: for it OutputText returns one possible output.
func OutputText(promptHash uint64, temperature float64, seed *int64, n int) string {
	return string(appendOutput(nil, outputBase(promptHash, temperature, seed, 0), 0, n))
}

func mix(x uint64) uint64 { return tokenizer.Mix(x) }
