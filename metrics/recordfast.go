package metrics

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// unmarshalRecord decodes one Record frame straight from its bytes (the format written by
// EncodeMsgpack), without the msgpack library's reader: every pass over requests.msgpack
// (summarizing, sampling, comparing) runs through here.
func unmarshalRecord(b []byte, r *Record) error {
	d := mpReader{b: b}
	*r = Record{}
	n, err := d.mapLen()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		key, err := d.str()
		if err != nil {
			return fmt.Errorf("record field name: %w", err)
		}
		if err := r.fastField(&d, key); err != nil {
			return fmt.Errorf("record field %q: %w", key, err)
		}
	}
	if d.i != len(d.b) {
		return fmt.Errorf("%d stray bytes after the record", len(d.b)-d.i)
	}
	return nil
}

func (r *Record) fastField(d *mpReader, key string) error {
	var err error
	str := func(dst *string) { *dst, err = d.str() }
	i64 := func(dst *int64) { *dst, err = d.int() }
	num := func(dst *int) {
		var v int64
		v, err = d.int()
		*dst = int(v)
	}
	switch key {
	case "id":
		str(&r.ID)
	case "class":
		str(&r.Class)
	case "session":
		str(&r.Session)
	case "turn":
		num(&r.Turn)
	case "repeat":
		num(&r.Repeat)
	case "phase":
		str(&r.Phase)
	case "arm":
		str(&r.Arm)
	case "intended":
		i64(&r.Intended)
	case "dispatched":
		i64(&r.Dispatched)
	case "sent":
		i64(&r.Sent)
	case "headers":
		i64(&r.Headers)
	case "first_token":
		i64(&r.FirstToken)
	case "end":
		i64(&r.End)
	case "in":
		num(&r.InputTokens)
	case "out":
		num(&r.OutputTokens)
	case "token_source":
		str(&r.TokenSource)
	case "attribution":
		str(&r.TokenAttribution)
	case "client_out":
		num(&r.ClientOutputTokens)
	case "usage_rejected":
		str(&r.UsageRejected)
	case "reasoning":
		num(&r.ReasoningTokens)
	case "reasoning_chunks":
		num(&r.ReasoningChunks)
	case "first_answer":
		i64(&r.FirstAnswer)
	case "requested":
		num(&r.RequestedTokens)
	case "server_in":
		num(&r.ServerInputTokens)
	case "server_out":
		num(&r.ServerOutputTokens)
	case "status":
		num(&r.Status)
	case "failure":
		var f string
		str(&f)
		r.Failure = FailureKind(f)
	case "error":
		str(&r.Error)
	case "output_hash":
		str(&r.OutputHash)
	case "response_id":
		str(&r.ResponseID)
	case "chunks":
		var m int
		if m, err = d.arrayLen(); err != nil {
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
	default:
		err = d.skip(0)
	}
	return err
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
	c, err := d.byte()
	if err != nil {
		return "", err
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
		return "", nil
	default:
		return "", fmt.Errorf("want a string, got type byte 0x%02x", c)
	}
	if err != nil {
		return "", err
	}
	p, err := d.need(int(n))
	return string(p), err
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

// skip steps over one value of any type; depth bounds nesting.
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
