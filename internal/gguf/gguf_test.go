package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestWriteLayout checks the bytes of a small file against the specification's layout, field
// by field: header, a string and an array value, tensor descriptors with aligned offsets, the
// padding before the data and each tensor's data at its offset.
func TestWriteLayout(t *testing.T) {
	f := &File{
		KV: []KV{{"general.architecture", "llama"}, {"a.list", []int32{-1, 7}}},
		Tensors: []Tensor{
			{Name: "x", Dims: []uint64{3}, Data: []float32{1, 2, 3}},
			{Name: "y", Dims: []uint64{2, 2}, Data: []float32{4, 5, 6, 7}},
		},
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	r := &reader{b: b}
	if string(r.next(4)) != "GGUF" || r.u32() != 3 || r.u64() != 2 || r.u64() != 2 {
		t.Fatalf("header: % x", b[:24])
	}
	if k, typ, v := r.str(), r.u32(), r.str(); k != "general.architecture" || typ != 8 || v != "llama" {
		t.Fatalf("first metadata: %q type %d %q", k, typ, v)
	}
	if k, typ, elem, n := r.str(), r.u32(), r.u32(), r.u64(); k != "a.list" || typ != 9 || elem != 5 || n != 2 {
		t.Fatalf("array metadata: %q type %d of %d ×%d", k, typ, elem, n)
	}
	if a, c := int32(r.u32()), int32(r.u32()); a != -1 || c != 7 {
		t.Fatalf("array values %d %d", a, c)
	}
	type info struct {
		name   string
		dims   []uint64
		offset uint64
	}
	var infos []info
	for range 2 {
		in := info{name: r.str()}
		for n := r.u32(); n > 0; n-- {
			in.dims = append(in.dims, r.u64())
		}
		if typ := r.u32(); typ != TypeF32 {
			t.Fatalf("tensor %s type %d", in.name, typ)
		}
		in.offset = r.u64()
		infos = append(infos, in)
	}
	if infos[0].offset != 0 || infos[1].offset != 32 || len(infos[1].dims) != 2 {
		t.Fatalf("descriptors %+v: want offsets 0 and 32 (12 bytes padded to the alignment)", infos)
	}
	data := (r.off + Alignment - 1) / Alignment * Alignment
	if bytes.ContainsFunc(b[r.off:data], func(c rune) bool { return c != 0 }) {
		t.Fatalf("padding before the data is not zeros: % x", b[r.off:data])
	}
	want := [][]float32{{1, 2, 3}, {4, 5, 6, 7}}
	for i, in := range infos {
		for j, w := range want[i] {
			at := data + int(in.offset) + 4*j
			if got := math.Float32frombits(binary.LittleEndian.Uint32(b[at:])); got != w {
				t.Fatalf("tensor %s[%d] = %v, want %v", in.name, j, got, w)
			}
		}
	}
	if len(b) != data+32+16+16 {
		t.Fatalf("file is %d bytes, want the data section to end padded at %d", len(b), data+64)
	}
}

func TestWriteRefusesBadInput(t *testing.T) {
	for name, f := range map[string]*File{
		"dims":  {Tensors: []Tensor{{Name: "x", Dims: []uint64{2, 2}, Data: []float32{1}}}},
		"value": {KV: []KV{{"k", 1.5}}},
	} {
		if err := f.Write(&bytes.Buffer{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := (Llama{Layers: 1, Embed: 10, FFN: 4, Heads: 3, KVHeads: 1, Context: 8}).File(); err == nil {
		t.Error("Embed not a multiple of Heads: no error")
	}
}

// TestOutputNeverPrefersEOS is the property the real-server tests rely on: for any hidden
// state the largest logit belongs to an ordinary piece and is positive, so neither greedy nor
// top-40 sampling ever picks </s>, <s>, <unk> or a byte token.
func TestOutputNeverPrefersEOS(t *testing.T) {
	m := TinyLlama()
	f, err := m.File()
	if err != nil {
		t.Fatal(err)
	}
	var out []float32
	for _, ten := range f.Tensors {
		if ten.Name == "output.weight" {
			out = ten.Data
		}
	}
	_, _, types := Vocabulary()
	normal := 0
	for _, typ := range types {
		if typ == tokNormal {
			normal++
		}
	}
	if normal < 80 {
		t.Fatalf("%d ordinary tokens: fewer than 80 lets a top-40 sample reach a zero logit", normal)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 2000 {
		h := make([]float32, m.Embed)
		for i := range h {
			h[i] = float32(rng.NormFloat64())
		}
		best, bestLogit, positive := -1, float32(math.Inf(-1)), 0
		for id := range types {
			var logit float32
			for i, w := range out[id*m.Embed : (id+1)*m.Embed] {
				logit += w * h[i]
			}
			if logit > bestLogit {
				best, bestLogit = id, logit
			}
			if logit > 0 {
				positive++
			}
		}
		if types[best] != tokNormal || bestLogit <= 0 || positive < 40 {
			t.Fatalf("trial %d: best token %d (type %d) logit %v, %d positive", trial, best, types[best], bestLogit, positive)
		}
	}
}

func TestVocabularyIsSentencePieceLlama(t *testing.T) {
	tokens, scores, types := Vocabulary()
	if len(tokens) != len(scores) || len(tokens) != len(types) {
		t.Fatal("lengths differ")
	}
	if tokens[UnkID] != "<unk>" || tokens[BOSID] != "<s>" || tokens[EOSID] != "</s>" || tokens[3+0x0A] != "<0x0A>" {
		t.Fatalf("special or byte tokens misplaced: %q %q %q %q", tokens[0], tokens[1], tokens[2], tokens[13])
	}
	seen := map[string]bool{}
	for _, tok := range tokens {
		if seen[tok] || tok == "" {
			t.Fatalf("duplicate or empty token %q", tok)
		}
		seen[tok] = true
	}
	if !seen[spaceMark+"a"] || !strings.HasPrefix(spaceMark, "\xe2\x96\x81") {
		t.Fatal("no word-boundary pieces")
	}
}

type reader struct {
	b   []byte
	off int
}

func (r *reader) next(n int) []byte { p := r.b[r.off : r.off+n]; r.off += n; return p }
func (r *reader) u32() uint32       { return binary.LittleEndian.Uint32(r.next(4)) }
func (r *reader) u64() uint64       { return binary.LittleEndian.Uint64(r.next(8)) }
func (r *reader) str() string       { return string(r.next(int(r.u64()))) }
