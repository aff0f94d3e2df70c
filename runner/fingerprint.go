package runner

import (
	"encoding/hex"
	"hash/fnv"
	"strconv"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// FingerprintTrace computes the trace's fingerprint (metrics.TraceFingerprint) in one pass
// over src, holding nothing: each component is the sum and the xor of a 64-bit hash per
// request, so the order of the file does not matter. It is the one fingerprint of a trace:
// summary.json's run.trace_fingerprint, compare's like-with-like check, and a shard's
// shard.json (its Digest) all come from it.
func FingerprintTrace(src traces.Source) (*metrics.TraceFingerprint, error) {
	var f fingerprinter
	src.Sessions(func(_ int, q *traces.Request) { f.add(q) })
	if err := src.Singles(func(_ int, q *traces.Request) error { f.add(q); return nil }); err != nil {
		return nil, err
	}
	return f.result(), nil
}

// fingerprinter accumulates FingerprintTrace's components request by request, for a pass
// over the trace that does more than fingerprint it (PlanShards).
type fingerprinter struct {
	acc [4]multiset
	n   int
}

func (f *fingerprinter) add(q *traces.Request) {
	f.n++
	id := hashStrings(q.ID)
	f.acc[0].add(id)
	f.acc[1].add(tokenizer.Mix(id ^ uint64(q.Arrival)))
	f.acc[2].add(tokenizer.Mix(id ^ tokenizer.Mix(uint64(q.InputTokens)<<32|uint64(uint32(q.OutputTokens)))))
	parts := []string{q.ID, q.Prompt}
	for _, m := range q.Messages {
		parts = append(parts, m.Role, m.Content)
	}
	f.acc[3].add(hashStrings(parts...))
}

func (f *fingerprinter) result() *metrics.TraceFingerprint {
	fp := &metrics.TraceFingerprint{Requests: f.n, IDs: f.acc[0].hex(), Arrivals: f.acc[1].hex(), Lengths: f.acc[2].hex(), Text: f.acc[3].hex()}
	fp.Digest = hex.EncodeToString(fnvSum(strconv.Itoa(f.n), fp.IDs, fp.Arrivals, fp.Lengths, fp.Text))
	return fp
}

type multiset struct{ sum, xor uint64 }

func (m *multiset) add(h uint64) {
	m.sum += tokenizer.Mix(h)
	m.xor ^= tokenizer.Mix(h ^ 0x9e3779b97f4a7c15)
}

func (m *multiset) hex() string {
	var b [16]byte
	for i := 0; i < 8; i++ {
		b[i] = byte(m.sum >> (56 - 8*i))
		b[8+i] = byte(m.xor >> (56 - 8*i))
	}
	return hex.EncodeToString(b[:])
}

// hashStrings is FNV-1a over the strings, each followed by a 0 byte.
func hashStrings(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

func fnvSum(parts ...string) []byte {
	h := fnv.New128a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}
