package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"
)

// The word cache and callers that hand the tokenizer a view of a reused buffer (issue 31:
// loadgen counted each streamed chunk through unsafe.String over its read buffer, the cache
// kept that string as a key, and the key changed under the map when the buffer was reused:
// wrong counts, then "internal/sync.HashTrieMap: ran out of hash bits while inserting").

// randomWord is a word of n letters drawn from the SentencePiece fixture's alphabet and a few
// letters outside it (which take byte fallback), so counts vary between words of equal length.
func randomWord(r *rand.Rand, n int) string {
	const letters = "helowrdaxzq"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

// viewOf returns a string that shares buf's bytes, as count.go's chunk counting used to.
func viewOf(buf []byte) string { return unsafe.String(&buf[0], len(buf)) }

// TestHFKeepsNoCallerString counts a word through a view of a buffer, overwrites the buffer
// with another word of the same length and counts that one: had the cache kept the view as
// its key, the second lookup could find the first word's ids under the overwritten key.
func TestHFKeepsNoCallerString(t *testing.T) {
	h := loadFixture(t, "sentencepiece")
	cold := loadFixture(t, "sentencepiece")
	coldCount := func(s string) int {
		cold.resetCache()
		return CountChunk(cold, s)
	}
	r := rand.New(rand.NewPCG(31, 3))
	buf := make([]byte, 6)
	tried, wrong := 0, 0
	for tried < 600 {
		a, b := randomWord(r, len(buf)), randomWord(r, len(buf))
		wantA, wantB := coldCount(a), coldCount(b)
		if wantA == wantB {
			continue
		}
		tried++
		h.resetCache()
		copy(buf, a)
		if got := CountChunk(h, viewOf(buf)); got != wantA {
			t.Fatalf("CountChunk(%q) = %d, want %d", a, got, wantA)
		}
		copy(buf, b) // the caller reuses its buffer
		if got := CountChunk(h, b); got != wantB {
			wrong++
			if wrong <= 3 {
				t.Errorf("after counting %q through a reused buffer, CountChunk(%q) = %d, want %d", a, b, got, wantB)
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d counts wrong after the caller reused its buffer", wrong, tried)
	}
}

// TestHFConcurrentReusedBuffers runs thousands of distinct strings through both fixtures
// from many goroutines, each through a buffer it overwrites after every call as a stream
// reader does, checking every count and encoding against a tokenizer that saw none of them.
// Under -race a kept view of a buffer is a data race the detector reports.
func TestHFConcurrentReusedBuffers(t *testing.T) {
	const goroutines, perG = 16, 400 // 6,400 strings per fixture
	for _, name := range []string{"sentencepiece", "bytelevel"} {
		t.Run(name, func(t *testing.T) {
			h := loadFixture(t, name)
			ref := loadFixture(t, name)
			texts := make([][]string, goroutines)
			counts := make([][]int, goroutines)
			r := rand.New(rand.NewPCG(31, 4))
			seen := map[string]bool{}
			for g := range texts {
				for len(texts[g]) < perG {
					s := randomWord(r, 1+r.IntN(12))
					if r.IntN(3) == 0 {
						s = " " + s + " " + randomWord(r, 1+r.IntN(5))
					}
					if r.IntN(5) == 0 {
						s = fmt.Sprintf("%s %d", s, r.IntN(1000))
					}
					if seen[s] {
						continue
					}
					seen[s] = true
					texts[g] = append(texts[g], s)
					counts[g] = append(counts[g], CountChunk(ref, s))
				}
			}
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := make([]byte, 0, 64)
					for i, s := range texts[g] {
						buf = append(buf[:0], s...)
						got := CountChunk(h, viewOf(buf))
						n := len(h.Encode(viewOf(buf)))
						for j := range buf {
							buf[j] = '#' // overwritten before the next call, as a read buffer is
						}
						if got != counts[g][i] {
							t.Errorf("CountChunk(%q) = %d, want %d", s, got, counts[g][i])
							return
						}
						if want := ref.Count(s); n != want {
							t.Errorf("len(Encode(%q)) = %d, want %d", s, n, want)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// TestHFCacheBounded feeds three generations' worth of distinct words through one HF: the
// cache never holds more than two generations, and a word in steady use stays cached across
// rotations.
func TestHFCacheBounded(t *testing.T) {
	h := loadFixture(t, "sentencepiece")
	const letters = "helowrdaxzq"
	word := func(i int) string {
		var b []byte
		for ; ; i /= len(letters) {
			b = append(b, letters[i%len(letters)])
			if i < len(letters) {
				return string(b)
			}
		}
	}
	hot := "hellohello" // not among the words below, its own cache key when counted as a chunk
	want := h.CountContinuation(hot)
	for i := range 3 * maxCached {
		h.CountContinuation(word(i))
		if i%1000 == 0 {
			if got := h.CountContinuation(hot); got != want {
				t.Fatalf("Count(%q) = %d after %d words, want %d", hot, got, i, want)
			}
		}
		if n := h.cache.len(); n > 2*maxCached {
			t.Fatalf("cache holds %d entries after %d words, more than 2×%d", n, i+1, maxCached)
		}
	}
	if _, ok := h.cache.get(hot); !ok {
		t.Error("a word counted every 1,000 words fell out of the cache")
	}
	if _, ok := h.cache.get(word(0)); ok {
		t.Error("the first of 3×maxCached words is still cached: the cache does not rotate")
	}
}

// keeper is a Tokenizer from outside the package that keeps every string it counts.
type keeper struct{ kept []string }

func (k *keeper) Name() string          { return "keeper" }
func (k *keeper) Count(s string) int    { k.kept = append(k.kept, s); return len(s) }
func (k *keeper) Encode(s string) []int { return make([]int, k.Count(s)) }

func TestCountChunkBytesCopiesForOtherTokenizers(t *testing.T) {
	k := &keeper{}
	buf := []byte("hello")
	if n := CountChunkBytes(k, buf); n != 5 {
		t.Fatalf("CountChunkBytes = %d, want 5", n)
	}
	copy(buf, "XXXXX")
	if k.kept[0] != "hello" {
		t.Errorf("a tokenizer that keeps its input saw %q change to %q: it was handed a view of the buffer", "hello", k.kept[0])
	}
	h := loadFixture(t, "sentencepiece")
	if got, want := CountChunkBytes(h, []byte(" hello")), CountChunk(h, " hello"); got != want {
		t.Errorf("CountChunkBytes(HF) = %d, CountChunk = %d", got, want)
	}
	if got := CountChunkBytes(h, nil); got != 0 {
		t.Errorf("CountChunkBytes(nil) = %d, want 0", got)
	}
}
