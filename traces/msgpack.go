package traces

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// MsgpackMagic starts every msgpack trace. It is followed by one msgpack map per request with
// the same keys and meanings as a JSONL v1 line (arrival_s and think_s as float64 seconds).
const MsgpackMagic = "LLMBTRC1"

// wireMsgpack is a Request as WriteMsgpack writes it.
type wireMsgpack struct {
	wireRequest `msgpack:",inline"`
	ArrivalS    float64 `msgpack:"arrival_s"`
	ThinkS      float64 `msgpack:"think_s,omitempty"`
	// Quality (issue 17): the JSON values as msgpack maps, arrays and numbers.
	Tools          any     `msgpack:"tools,omitempty"`
	ToolChoice     any     `msgpack:"tool_choice,omitempty"`
	ResponseFormat any     `msgpack:"response_format,omitempty"`
	Expect         any     `msgpack:"expect,omitempty"`
	ToolDelayS     float64 `msgpack:"tool_delay_s,omitempty"`    // agentic sessions
	CancelAfterMs  float64 `msgpack:"cancel_after_ms,omitempty"` // cancellations (cancel.go)
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
		m := wireMsgpack{wireRequest: toWire(r), ArrivalS: r.Arrival.Seconds(), ThinkS: r.Think.Seconds(), ToolDelayS: r.ToolDelay.Seconds(),
			Tools: msgpackValue(r.Tools), ToolChoice: msgpackValue(r.ToolChoice), ResponseFormat: msgpackValue(r.ResponseFormat)}
		m.CancelAfterMs = float64(r.CancelAfter) / 1e6
		if len(r.Expect) > 0 {
			raw, err := json.Marshal(r.Expect)
			if err != nil {
				return fmt.Errorf("write trace: request %q: expect: %w", r.ID, err)
			}
			m.Expect = msgpackValue(raw)
		}
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
	return collect(name, errf, func(errf func(*LineError) bool, emit func(*Request) bool) error {
		return scanMsgpack(r, name, opts, errf, emit)
	})
}

// errUnreadable ends a msgpack scan after a problem it cannot read past (errf has it).
var errUnreadable = errors.New("unreadable msgpack trace")

// scanMsgpack decodes the records of r in order, like scanJSONL. A problem that leaves the
// stream unreadable (a bad header, a malformed record) ends the scan after errf with
// errUnreadable.
func scanMsgpack(r io.Reader, name string, opts ReadOptions, errf func(*LineError) bool, emit func(*Request) bool) error {
	opts.dir = traceDir(name)
	br := bufio.NewReaderSize(r, 64<<10)
	magic := make([]byte, len(MsgpackMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != MsgpackMagic {
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("read %s: %w", name, err)
		}
		errf(&LineError{File: name, Field: "header",
			Reason: "not a msgpack trace (it must start with " + MsgpackMagic + "; JSONL traces need a name not ending in .msgpack)"})
		return errUnreadable
	}
	dec := msgpack.NewDecoder(br)
	for rec := 1; ; rec++ {
		if _, err := br.Peek(1); err == io.EOF {
			break
		}
		v, err := decodeValue(dec, 0)
		if err != nil {
			le := &LineError{File: name, Line: rec, Reason: "invalid msgpack: " + err.Error(), Err: err}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				le.Reason = "the record is cut short (the file ends inside it; was it truncated?)"
			}
			errf(le) // the stream cannot be resynchronized after a bad record
			return errUnreadable
		}
		ms, ok := asObject(v)
		if !ok {
			if !errf(&LineError{File: name, Line: rec, Reason: "each record must be a map (got " + describe(v) + ")"}) {
				return nil
			}
			continue
		}
		req, ferrs := decodeRecord(ms, opts)
		req.Line = rec
		for _, fe := range ferrs {
			if !errf(&LineError{File: name, Line: rec, Field: fe.field, Reason: fe.reason}) {
				return nil
			}
		}
		if len(ferrs) == 0 && !emit(&req) {
			return nil
		}
	}
	return nil
}

// maxDepth bounds the nesting of msgpack values in a trace record.
const maxDepth = 64

// decodeValue decodes one msgpack value without trusting declared sizes for allocation (a
// corrupt length must not reserve gigabytes): arrays and maps grow as their elements arrive,
// strings are read by the library in bounded chunks, and binary and extension values, which
// the trace format never uses, are refused before their payload is read.
func decodeValue(d *msgpack.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("values nested deeper than %d levels", maxDepth)
	}
	c, err := d.PeekCode()
	if err != nil {
		return nil, err
	}
	switch {
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := d.DecodeArrayLen()
		if err != nil || n < 0 {
			return nil, err
		}
		s := make([]any, 0, min(n, 64))
		for i := 0; i < n; i++ {
			v, err := decodeValue(d, depth+1)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := d.DecodeMapLen()
		if err != nil || n < 0 {
			return nil, err
		}
		m := make(map[string]any, min(n, 64))
		for i := 0; i < n; i++ {
			k, err := decodeValue(d, depth+1)
			if err != nil {
				return nil, err
			}
			v, err := decodeValue(d, depth+1)
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
	case c == msgpcode.Bin8 || c == msgpcode.Bin16 || c == msgpcode.Bin32 ||
		c == msgpcode.Ext8 || c == msgpcode.Ext16 || c == msgpcode.Ext32 || msgpcode.IsFixedExt(c):
		return nil, fmt.Errorf("binary and extension values (code %#x) are not part of the trace format", c)
	}
	return d.DecodeInterfaceLoose()
}
