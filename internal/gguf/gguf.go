// Package gguf writes GGUF model files for tests: the container format (header, typed
// metadata, tensor descriptors, aligned tensor data) and, on top of it, a tiny Llama model with
// a SentencePiece-style vocabulary and seeded weights that a real llama.cpp-based server loads
// (internal/realserver serves it with Ollama). It writes only; nothing here reads a GGUF file.
// It is for tests only.
//
// The layout follows the GGUF specification (version 3, ggml's docs/gguf.md): little-endian
// throughout; a header of the magic "GGUF", the version (uint32), the tensor count and the
// metadata count (uint64 each); the metadata as (key, value type, value) triples, strings as
// a uint64 length and bytes, arrays as an element type, a uint64 count and the elements; one
// descriptor per tensor (name, dimension count, dimensions innermost first, ggml type, offset
// into the data section); zero padding to general.alignment; and the tensors' data, each
// starting at a multiple of the alignment.
package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Version is the GGUF format version written.
const Version = 3

// Alignment is the data alignment written (the specification's default for general.alignment).
const Alignment = 32

// Metadata value types (the specification's gguf_metadata_value_type).
const (
	typeUint32  uint32 = 4
	typeInt32   uint32 = 5
	typeFloat32 uint32 = 6
	typeBool    uint32 = 7
	typeString  uint32 = 8
	typeArray   uint32 = 9
)

// TypeF32 is ggml's tensor type of 32-bit floats, the only one written.
const TypeF32 uint32 = 0

// KV is one metadata entry. Value is a uint32, int32, float32, bool, string, []string,
// []float32 or []int32; Write refuses anything else.
type KV struct {
	Key   string
	Value any
}

// Tensor is one F32 tensor. Dims are innermost first, as GGUF and ggml store them: a matrix
// of R rows of C columns has Dims [C, R] and Data holds the rows one after another.
type Tensor struct {
	Name string
	Dims []uint64
	Data []float32
}

// File is a GGUF file's content in the order it is written.
type File struct {
	KV      []KV
	Tensors []Tensor
}

// Write writes f to w as a GGUF file.
func (f *File) Write(w io.Writer) error {
	for _, t := range f.Tensors {
		n := uint64(1)
		for _, d := range t.Dims {
			n *= d
		}
		if len(t.Dims) == 0 || n != uint64(len(t.Data)) {
			return fmt.Errorf("gguf: tensor %q: dims %v hold %d values, data has %d", t.Name, t.Dims, n, len(t.Data))
		}
	}
	e := &encoder{w: bufio.NewWriter(w)}
	e.bytes([]byte("GGUF"))
	e.u32(Version)
	e.u64(uint64(len(f.Tensors)))
	e.u64(uint64(len(f.KV)))
	for _, kv := range f.KV {
		e.str(kv.Key)
		if err := e.value(kv.Value); err != nil {
			return fmt.Errorf("gguf: metadata %q: %w", kv.Key, err)
		}
	}
	offset := uint64(0)
	for _, t := range f.Tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(TypeF32)
		e.u64(offset)
		offset += pad(uint64(len(t.Data)) * 4)
	}
	e.zeros(pad(e.n) - e.n)
	for _, t := range f.Tensors {
		for _, v := range t.Data {
			e.u32(math.Float32bits(v))
		}
		size := uint64(len(t.Data)) * 4
		e.zeros(pad(size) - size)
	}
	if e.err != nil {
		return e.err
	}
	return e.w.Flush()
}

// pad rounds n up to a multiple of Alignment.
func pad(n uint64) uint64 { return (n + Alignment - 1) / Alignment * Alignment }

// encoder writes little-endian values, counting bytes and keeping the first error.
type encoder struct {
	w   *bufio.Writer
	n   uint64
	err error
	buf [8]byte
}

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	_, e.err = e.w.Write(b)
	e.n += uint64(len(b))
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.bytes(e.buf[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.bytes(e.buf[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.bytes([]byte(s))
}

func (e *encoder) zeros(n uint64) {
	for ; n > 0; n-- {
		e.bytes([]byte{0})
	}
}

// value writes a metadata value's type and the value.
func (e *encoder) value(v any) error {
	switch v := v.(type) {
	case uint32:
		e.u32(typeUint32)
		e.u32(v)
	case int32:
		e.u32(typeInt32)
		e.u32(uint32(v))
	case float32:
		e.u32(typeFloat32)
		e.u32(math.Float32bits(v))
	case bool:
		e.u32(typeBool)
		b := byte(0)
		if v {
			b = 1
		}
		e.bytes([]byte{b})
	case string:
		e.u32(typeString)
		e.str(v)
	case []string:
		e.arrayHead(typeString, len(v))
		for _, s := range v {
			e.str(s)
		}
	case []float32:
		e.arrayHead(typeFloat32, len(v))
		for _, f := range v {
			e.u32(math.Float32bits(f))
		}
	case []int32:
		e.arrayHead(typeInt32, len(v))
		for _, i := range v {
			e.u32(uint32(i))
		}
	default:
		return fmt.Errorf("unsupported value type %T", v)
	}
	return nil
}

func (e *encoder) arrayHead(elem uint32, n int) {
	e.u32(typeArray)
	e.u32(elem)
	e.u64(uint64(n))
}
