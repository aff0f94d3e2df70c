package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLineBytes bounds one line (and one event's data) of a server-sent event stream
// when Target.MaxLineBytes is 0: a longer line is a malformed stream, never an unbounded
// allocation. Real chunks are a few hundred bytes.
const DefaultMaxLineBytes = 1 << 20

// keepLong is the assembly buffer a reader keeps between streams; a larger one (left by a
// long line) is dropped so that idle pooled readers hold little memory.
const keepLong = 64 << 10

// errMalformedSSE marks framing errors (as opposed to the connection breaking).
var errMalformedSSE = errors.New("malformed SSE")

// sseReader splits a text/event-stream body into events as the WHATWG HTML specification
// ("Server-sent events", section 9.2.6) says: lines end in CR, LF or CRLF; a line starting
// with ':' is a comment; a line without ':' is a field with an empty value; fields other than
// data and event are ignored (id and retry mean nothing to a benchmark); a blank line
// dispatches the event, unless its data is empty. A leading byte order mark is dropped. It
// reuses its buffers: the data returned by next is valid until the following call.
type sseReader struct {
	r *bufio.Reader
	sseEvent
	long      []byte // assembly buffer for lines longer than what the bufio buffer holds
	eof       bool
	pendingCR bool // the last line ended in CR: a LF right after it belongs to that line ending
	started   bool // the BOM check is done
}

func newSSEReader(r io.Reader, size int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, size), sseEvent: sseEvent{max: DefaultMaxLineBytes}}
}

func (s *sseReader) reset(r io.Reader) {
	s.r.Reset(r)
	s.clear()
	if cap(s.long) > keepLong {
		s.long = nil
	}
	if cap(s.data) > keepLong {
		s.data = nil
	}
	s.eof, s.pendingCR, s.started = false, false, false
}

// next returns the next event's data and its event name (empty for the default "message").
// At the end of the body it returns io.EOF; a body that ends in the middle of a line returns
// io.ErrUnexpectedEOF; a line or event over the limit wraps errMalformedSSE; other read errors
// are returned as they are. An event still pending when the body ends after a complete line
// is delivered (some servers omit the final blank line).
func (s *sseReader) next() (data, event []byte, err error) {
	s.clear()
	for {
		if s.eof {
			return nil, nil, io.EOF
		}
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF {
				s.eof = true
				if s.hasData && len(s.data) > 0 {
					return s.data, s.event, nil
				}
			}
			return nil, nil, err
		}
		if s.line(line) {
			return s.data, s.event, nil
		} else if s.err != nil {
			return nil, nil, s.err
		}
	}
}

// sseEvent assembles one event from its lines, the part of the specification's parsing that
// sseReader (pull, over a body) and ssePush (push, frame by frame) share.
type sseEvent struct {
	max     int    // bound on one line and one event's data
	data    []byte // the current event's data lines joined by "\n"
	hasData bool
	event   []byte // the current event's "event:" field
	err     error  // set when line returned false on an event over the limit
}

// clear starts a new event.
func (s *sseEvent) clear() {
	s.data = s.data[:0]
	s.event = s.event[:0]
	s.hasData, s.err = false, nil
}

// line takes one line (without its ending); true when it dispatches the event, which is then
// in data and event until the next call. False with err set: the event's data is over max.
func (s *sseEvent) line(line []byte) bool {
	if len(line) == 0 {
		if s.hasData && len(s.data) > 0 {
			return true
		}
		s.clear()
		return false
	}
	if line[0] == ':' {
		return false // comment (keep-alive)
	}
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
	case "event":
		s.event = append(s.event[:0], value...)
		return false
	case "error":
		// llama.cpp's server writes an error in a started stream as an "error:" line,
		// not as data: deliver it as an "error" event. Other unknown fields are ignored,
		// as the SSE specification says.
		s.event = append(s.event[:0], "error"...)
	default:
		return false
	}
	if s.hasData {
		s.data = append(s.data, '\n')
	}
	if len(s.data)+len(value) > s.max {
		s.err = fmt.Errorf("%w: event data longer than the %d-byte limit (--max-line-bytes)", errMalformedSSE, s.max)
		return false
	}
	s.data = append(s.data, value...)
	s.hasData = true
	return false
}

// readLine returns the next line without its line ending (CR, LF or CRLF). io.EOF means the
// body ended at a line boundary; io.ErrUnexpectedEOF that it ended inside a line.
func (s *sseReader) readLine() ([]byte, error) {
	long := false
	for {
		if _, err := s.r.Peek(1); err != nil {
			if err == io.EOF {
				if long {
					return nil, io.ErrUnexpectedEOF
				}
				return nil, io.EOF
			}
			return nil, err
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		if s.pendingCR {
			s.pendingCR = false
			if buf[0] == '\n' {
				s.r.Discard(1)
				continue
			}
		}
		if !s.started {
			s.started = true
			// The first bytes of a stream may hold a BOM; Peek waits for three of them (every
			// event is longer), or returns fewer at the end of the body.
			if b, _ := s.r.Peek(3); bytes.Equal(b, []byte("\xEF\xBB\xBF")) {
				s.r.Discard(3)
				continue
			}
		}
		i := lineEnd(buf)
		if i < 0 {
			if !long {
				s.long = s.long[:0]
				long = true
			}
			if len(s.long)+len(buf) > s.max {
				return nil, fmt.Errorf("%w: line longer than the %d-byte limit (--max-line-bytes)", errMalformedSSE, s.max)
			}
			s.long = append(s.long, buf...)
			s.r.Discard(len(buf))
			continue
		}
		s.pendingCR = buf[i] == '\r'
		line := buf[:i]
		if long {
			if len(s.long)+len(line) > s.max {
				return nil, fmt.Errorf("%w: line longer than the %d-byte limit (--max-line-bytes)", errMalformedSSE, s.max)
			}
			s.long = append(s.long, line...)
			line = s.long
		} else if len(line) > s.max {
			return nil, fmt.Errorf("%w: line longer than the %d-byte limit (--max-line-bytes)", errMalformedSSE, s.max)
		}
		s.r.Discard(i + 1) // the bytes stay in the buffer until the next read
		return line, nil
	}
}

// lineEnd is the index of the first CR or LF in b, -1 if none (IndexByte is vectorized;
// IndexAny is not).
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	head := b
	if i >= 0 {
		head = b[:i]
	}
	if j := bytes.IndexByte(head, '\r'); j >= 0 {
		i = j
	}
	return i
}

func clip(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
