package metrics

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// unmarshalRecord decodes one Record frame straight from its bytes (the format written by
// EncodeMsgpack, keys from recordFields), without the msgpack library's reader: every pass over
// requests.msgpack (summarizing, sampling, comparing) runs through here. Keys are expected in
// the table's order, which makes the lookup one comparison; keys in another order are found
// by recordFieldIndex, and unknown keys are skipped.
func unmarshalRecord(b []byte, r *Record) error {
	d := mpReader{b: b}
	*r = Record{}
	n, err := d.mapLen()
	if err != nil {
		return err
	}
	next := 0 // the recordFields entry the encoder writes next
	for i := 0; i < n; i++ {
		key, err := d.rawStr()
		if err != nil {
			return fmt.Errorf("record field name: %w", err)
		}
		fi := -1
		if string(key) != chunksKey {
			for next < len(recordFields) && recordFields[next].key != string(key) {
				next++
			}
			fi = next
			if fi == len(recordFields) {
				var ok bool
				if fi, ok = recordFieldIndex[string(key)]; !ok {
					fi = -1
				}
			}
		}
		switch {
		case fi >= 0:
			err = recordFields[fi].decode(&d, r)
			if fi == next {
				next++
			} else {
				next = 0
			}
		case string(key) == chunksKey:
			err = r.decodeChunks(&d)
		default:
			err = d.skip(0)
		}
		if err != nil {
			return fmt.Errorf("record field %q: %w", key, err)
		}
	}
	if d.i != len(d.b) {
		return fmt.Errorf("%d stray bytes after the record", len(d.b)-d.i)
	}
	return nil
}

// decode reads f's value from d into r.
func (f *recordField) decode(d *mpReader, r *Record) error {
	if f.calls != nil {
		calls, err := d.calls()
		*f.calls(r) = calls
		return err
	}
	if f.str != nil {
		s, err := d.str()
		*f.str(r) = s
		return err
	}
	v, err := d.int()
	if f.i64 != nil {
		*f.i64(r) = v
	} else {
		*f.num(r) = int(v)
	}
	return err
}

// decodeChunks reads the flat chunk array [dt0, n0, dt1, n1, ...].
func (r *Record) decodeChunks(d *mpReader) error {
	m, err := d.arrayLen()
	if err != nil {
		return err
	}
	if m%2 != 0 {
		return fmt.Errorf("chunk array has odd length %d", m)
	}
	if m > len(d.b)-d.i { // each element takes at least one byte
		return fmt.Errorf("chunk array length %d exceeds the frame", m)
	}
	r.Chunks = make([]Chunk, 0, m/2)
	var t int64
	for j := 0; j < m; j += 2 {
		dt, err := d.int()
		if err != nil {
			return err
		}
		k, err := d.int()
		if err != nil {
			return err
		}
		if k < math.MinInt32 || k > math.MaxInt32 {
			return fmt.Errorf("chunk token count %d out of range", k)
		}
		t += dt
		r.Chunks = append(r.Chunks, Chunk{T: t, Tokens: int32(k)})
	}
	return nil
}

// mpReader reads the msgpack subset a Record uses, and skips anything else.
type mpReader struct {
	b []byte
	i int
}

var errShort = errors.New("unexpected end of record")

func (d *mpReader) need(n int) ([]byte, error) {
	if n < 0 || len(d.b)-d.i < n {
		return nil, errShort
	}
	p := d.b[d.i : d.i+n]
	d.i += n
	return p, nil
}

func (d *mpReader) byte() (byte, error) {
	if d.i >= len(d.b) {
		return 0, errShort
	}
	c := d.b[d.i]
	d.i++
	return c, nil
}

func (d *mpReader) uintN(n int) (uint64, error) {
	p, err := d.need(n)
	if err != nil {
		return 0, err
	}
	switch n {
	case 1:
		return uint64(p[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(p)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(p)), nil
	default:
		return binary.BigEndian.Uint64(p), nil
	}
}

func (d *mpReader) mapLen() (int, error) {
	c, err := d.byte()
	if err != nil {
		return 0, err
	}
	switch {
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f), nil
	case c == 0xde:
		n, err := d.uintN(2)
		return int(n), err
	case c == 0xdf:
		n, err := d.uintN(4)
		return int(n), err
	}
	return 0, fmt.Errorf("want a map, got type byte 0x%02x", c)
}

func (d *mpReader) arrayLen() (int, error) {
	c, err := d.byte()
	if err != nil {
		return 0, err
	}
	switch {
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f), nil
	case c == 0xc0:
		return 0, nil
	case c == 0xdc:
		n, err := d.uintN(2)
		return int(n), err
	case c == 0xdd:
		n, err := d.uintN(4)
		return int(n), err
	}
	return 0, fmt.Errorf("want an array, got type byte 0x%02x", c)
}

func (d *mpReader) str() (string, error) {
	p, err := d.rawStr()
	return string(p), err
}

// rawStr is str without the copy: the bytes alias the frame.
func (d *mpReader) rawStr() ([]byte, error) {
	c, err := d.byte()
	if err != nil {
		return nil, err
	}
	var n uint64
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = uint64(c & 0x1f)
	case c == 0xd9 || c == 0xc4:
		n, err = d.uintN(1)
	case c == 0xda || c == 0xc5:
		n, err = d.uintN(2)
	case c == 0xdb || c == 0xc6:
		n, err = d.uintN(4)
	case c == 0xc0:
		return nil, nil
	default:
		return nil, fmt.Errorf("want a string, got type byte 0x%02x", c)
	}
	if err != nil {
		return nil, err
	}
	return d.need(int(n))
}

func (d *mpReader) int() (int64, error) {
	c, err := d.byte()
	if err != nil {
		return 0, err
	}
	switch {
	case c <= 0x7f:
		return int64(c), nil
	case c >= 0xe0:
		return int64(int8(c)), nil
	}
	switch c {
	case 0xcc, 0xcd, 0xce, 0xcf:
		u, err := d.uintN(1 << (c - 0xcc))
		if err != nil {
			return 0, err
		}
		if u > math.MaxInt64 {
			return 0, fmt.Errorf("integer %d overflows int64", u)
		}
		return int64(u), nil
	case 0xd0:
		u, err := d.uintN(1)
		return int64(int8(u)), err
	case 0xd1:
		u, err := d.uintN(2)
		return int64(int16(u)), err
	case 0xd2:
		u, err := d.uintN(4)
		return int64(int32(u)), err
	case 0xd3:
		u, err := d.uintN(8)
		return int64(u), err
	case 0xc0:
		return 0, nil
	}
	return 0, fmt.Errorf("want an integer, got type byte 0x%02x", c)
}

// skip steps over one value of any type; depth bounds nesting. It is one switch with a case per
// msgpack type byte on purpose (about 90 lines): the cases read as the format's own table and
// splitting them would scatter it.
func (d *mpReader) skip(depth int) error {
	if depth > 64 {
		return errors.New("value nested too deeply")
	}
	c, err := d.byte()
	if err != nil {
		return err
	}
	skipN := func(n uint64, err error) error {
		if err != nil {
			return err
		}
		if n > uint64(len(d.b)-d.i) {
			return errShort
		}
		d.i += int(n)
		return nil
	}
	items := func(n uint64, err error) error {
		if err != nil {
			return err
		}
		if n > uint64(len(d.b)-d.i) {
			return errShort
		}
		for k := uint64(0); k < n; k++ {
			if err := d.skip(depth + 1); err != nil {
				return err
			}
		}
		return nil
	}
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return nil
	case c >= 0x80 && c <= 0x8f:
		return items(2*uint64(c&0x0f), nil)
	case c >= 0x90 && c <= 0x9f:
		return items(uint64(c&0x0f), nil)
	case c >= 0xa0 && c <= 0xbf:
		return skipN(uint64(c&0x1f), nil)
	}
	switch c {
	case 0xc4, 0xd9:
		return skipN(d.uintN(1))
	case 0xc5, 0xda:
		return skipN(d.uintN(2))
	case 0xc6, 0xdb:
		return skipN(d.uintN(4))
	case 0xc7:
		n, err := d.uintN(1)
		return skipN(n+1, err)
	case 0xc8:
		n, err := d.uintN(2)
		return skipN(n+1, err)
	case 0xc9:
		n, err := d.uintN(4)
		return skipN(n+1, err)
	case 0xca:
		return skipN(4, nil)
	case 0xcb:
		return skipN(8, nil)
	case 0xcc, 0xd0:
		return skipN(1, nil)
	case 0xcd, 0xd1:
		return skipN(2, nil)
	case 0xce, 0xd2:
		return skipN(4, nil)
	case 0xcf, 0xd3:
		return skipN(8, nil)
	case 0xd4:
		return skipN(2, nil)
	case 0xd5:
		return skipN(3, nil)
	case 0xd6:
		return skipN(5, nil)
	case 0xd7:
		return skipN(9, nil)
	case 0xd8:
		return skipN(17, nil)
	case 0xdc:
		return items(d.uintN(2))
	case 0xdd:
		return items(d.uintN(4))
	case 0xde:
		n, err := d.uintN(2)
		return items(2*n, err)
	case 0xdf:
		n, err := d.uintN(4)
		return items(2*n, err)
	}
	return fmt.Errorf("unknown type byte 0x%02x", c)
}

// calls reads the flat tool-call array [id0, name0, args0, ...].
func (d *mpReader) calls() ([]ToolCall, error) {
	m, err := d.arrayLen()
	if err != nil {
		return nil, err
	}
	if m%3 != 0 {
		return nil, fmt.Errorf("tool-call array has length %d, not a multiple of 3", m)
	}
	if m > len(d.b)-d.i { // each element takes at least one byte
		return nil, fmt.Errorf("tool-call array length %d exceeds the frame", m)
	}
	if m == 0 {
		return nil, nil
	}
	out := make([]ToolCall, m/3)
	for i := range out {
		var s [3]string
		for j := range s {
			if s[j], err = d.str(); err != nil {
				return nil, err
			}
		}
		out[i] = ToolCall{ID: s[0], Name: s[1], Arguments: s[2]}
	}
	return out, nil
}
