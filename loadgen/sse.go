package loadgen

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// maxEventBytes bounds one server-sent event; a longer one is a malformed stream (and never an
// unbounded allocation).
const maxEventBytes = 8 << 20

// errMalformedSSE marks framing errors (as opposed to the connection breaking).
var errMalformedSSE = errors.New("malformed SSE")

// sseReader splits a text/event-stream body into events. It reuses its buffers: the data
// returned by next is valid until the following call.
type sseReader struct {
	r       *bufio.Reader
	data    []byte // the current event's data lines joined by "\n"
	hasData bool
	event   []byte // the current event's "event:" field
	long    []byte // assembly buffer for lines longer than the bufio buffer
	eof     bool
}

func newSSEReader(r io.Reader, size int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, size)}
}

func (s *sseReader) reset(r io.Reader) {
	s.r.Reset(r)
	s.data = s.data[:0]
	s.event = s.event[:0]
	s.hasData = false
	s.eof = false
}

// next returns the next event's data and its event name (empty for the default "message").
// At the end of the body it returns io.EOF; a body that ends in the middle of a line returns
// io.ErrUnexpectedEOF; a framing error wraps errMalformedSSE; other read errors are returned
// as they are. An event still pending when the body ends after a complete line is delivered
// (some servers omit the final blank line).
func (s *sseReader) next() (data, event []byte, err error) {
	s.data = s.data[:0]
	s.event = s.event[:0]
	s.hasData = false
	for {
		if s.eof {
			return nil, nil, io.EOF
		}
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF {
				s.eof = true
				if s.hasData {
					return s.data, s.event, nil
				}
			}
			return nil, nil, err
		}
		if len(line) == 0 {
			if s.hasData {
				return s.data, s.event, nil
			}
			s.event = s.event[:0]
			continue
		}
		if line[0] == ':' {
			continue // comment (keep-alive)
		}
		field, value := line, []byte(nil)
		for i, c := range line {
			if c == ':' {
				field, value = line[:i], line[i+1:]
				if len(value) > 0 && value[0] == ' ' {
					value = value[1:]
				}
				break
			}
		}
		switch string(field) {
		case "data":
			if s.hasData {
				s.data = append(s.data, '\n')
			}
			if len(s.data)+len(value) > maxEventBytes {
				return nil, nil, fmt.Errorf("%w: event longer than %d bytes", errMalformedSSE, maxEventBytes)
			}
			s.data = append(s.data, value...)
			s.hasData = true
		case "event":
			s.event = append(s.event[:0], value...)
		case "error":
			// llama.cpp's server writes an error in a started stream as an "error:" line,
			// not as data: deliver it as an "error" event.
			s.event = append(s.event[:0], "error"...)
			if s.hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.hasData = true
		case "id", "retry":
		default:
			return nil, nil, fmt.Errorf("%w: unexpected line %q", errMalformedSSE, clip(line, 64))
		}
	}
}

// readLine returns the next line without its line ending. io.EOF means the body ended at a
// line boundary; io.ErrUnexpectedEOF that it ended inside a line.
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(s.long) > maxEventBytes {
				return nil, fmt.Errorf("%w: line longer than %d bytes", errMalformedSSE, maxEventBytes)
			}
			line, err = s.r.ReadSlice('\n')
			s.long = append(s.long, line...)
		}
		line = s.long
	}
	if err != nil {
		if err == io.EOF {
			if len(line) == 0 {
				return nil, io.EOF
			}
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

func clip(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
