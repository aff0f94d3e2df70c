package traces

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"
)

// MsgpackMagic starts every msgpack trace. It is followed by one msgpack map per request with
// the same keys and meanings as a JSONL v1 line (arrival_s and think_s as float64 seconds).
const MsgpackMagic = "LLMBTRC1"

// wireMsgpack is a Request as WriteMsgpack writes it.
type wireMsgpack struct {
	wireRequest `msgpack:",inline"`
	ArrivalS    float64 `msgpack:"arrival_s"`
	ThinkS      float64 `msgpack:"think_s,omitempty"`
}

// WriteMsgpack writes reqs as a msgpack trace (MsgpackMagic, then one map per request). Times
// are float64 seconds, which round-trip to the nanosecond for offsets below about 25 days.
func WriteMsgpack(w io.Writer, reqs []Request) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := bw.WriteString(MsgpackMagic); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	enc := msgpack.NewEncoder(bw)
	enc.UseCompactInts(true)
	for i := range reqs {
		r := &reqs[i]
		m := wireMsgpack{wireRequest: toWire(r), ArrivalS: r.Arrival.Seconds(), ThinkS: r.Think.Seconds()}
		if err := enc.Encode(&m); err != nil {
			return fmt.Errorf("write trace: request %q: %w", r.ID, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}

// ReadMsgpack reads a msgpack trace written by WriteMsgpack. Errors are *LineError values whose
// Line is the 1-based record number. Requests come back sorted by Arrival as with Read.
func ReadMsgpack(r io.Reader, name string, opts ReadOptions) ([]Request, error) {
	var first *LineError
	reqs, err := readMsgpack(r, name, opts, func(e *LineError) bool { first = e; return false })
	if err != nil {
		return nil, err
	}
	if first != nil {
		return nil, first
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%s: no requests in the msgpack trace", name)
	}
	return reqs, nil
}

func readMsgpack(r io.Reader, name string, opts ReadOptions, errf func(*LineError) bool) ([]Request, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic := make([]byte, len(MsgpackMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != MsgpackMagic {
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		errf(&LineError{File: name, Field: "header",
			Reason: "not a msgpack trace (it must start with " + MsgpackMagic + "; JSONL traces need a name not ending in .msgpack)"})
		return nil, nil
	}
	dec := msgpack.NewDecoder(br)
	dec.SetMapDecoder(decodeMapBounded)
	var reqs []Request
	for rec := 1; ; rec++ {
		if _, err := br.Peek(1); err == io.EOF {
			break
		}
		v, err := dec.DecodeInterfaceLoose()
		if err != nil {
			le := &LineError{File: name, Line: rec, Reason: "invalid msgpack: " + err.Error(), Err: err}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				le.Reason = "the record is cut short (the file ends inside it; was it truncated?)"
			}
			errf(le) // the stream cannot be resynchronized after a bad record
			return nil, nil
		}
		ms, ok := asObject(v)
		if !ok {
			if !errf(&LineError{File: name, Line: rec, Reason: "each record must be a map (got " + describe(v) + ")"}) {
				return nil, nil
			}
			continue
		}
		req, ferrs := decodeRecord(ms, opts)
		req.Line = rec
		for _, fe := range ferrs {
			if !errf(&LineError{File: name, Line: rec, Field: fe.field, Reason: fe.reason}) {
				return nil, nil
			}
		}
		if len(ferrs) == 0 {
			reqs = append(reqs, req)
		}
	}
	return finish(reqs, name, errf), nil
}

// decodeMapBounded decodes a msgpack map without trusting its declared size for allocation
// (a corrupt length must not reserve gigabytes) and accepts non-string keys.
func decodeMapBounded(d *msgpack.Decoder) (any, error) {
	n, err := d.DecodeMapLen()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, nil
	}
	m := make(map[string]any, min(n, 64))
	for i := 0; i < n; i++ {
		k, err := d.DecodeInterfaceLoose()
		if err != nil {
			return nil, err
		}
		v, err := d.DecodeInterfaceLoose()
		if err != nil {
			return nil, err
		}
		ks, ok := k.(string)
		if !ok {
			ks = fmt.Sprint(k)
		}
		m[ks] = v
	}
	return m, nil
}
