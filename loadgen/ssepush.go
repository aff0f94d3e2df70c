package loadgen

import (
	"bytes"
	"fmt"
	"io"
)

// ssePush is sseReader's twin for a body that arrives in pieces pushed to it (the HTTP/2
// client's DATA frames, handed over on the connection's read loop): the same events, limits
// and errors, byte for byte (FuzzSSEPushMatchesReader), without a goroutine waiting on a
// reader per stream.
type ssePush struct {
	sseEvent
	part      []byte // the line so far
	head      []byte // the first bytes, until three tell whether they are a byte order mark
	pendingCR bool
	started   bool
	stopped   bool // emit said stop: the rest is not parsed
	failed    error
}

var bom = []byte("\xEF\xBB\xBF")

func newSSEPush(max int) *ssePush { return &ssePush{sseEvent: sseEvent{max: max}} }

// feed takes the next bytes of the body and calls emit for each event they complete; emit
// returns false to stop (the rest is not parsed). An error (a line or event over the limit)
// stops the parser: every later call returns it.
func (p *ssePush) feed(b []byte, emit func(data, event []byte) bool) error {
	if p.failed != nil {
		return p.failed
	}
	for len(b) > 0 && !p.stopped {
		if !p.started {
			take := min(len(b), len(bom)-len(p.head))
			p.head = append(p.head, b[:take]...)
			b = b[take:]
			if len(p.head) < len(bom) {
				return nil
			}
			if err := p.begin(emit); err != nil || p.stopped {
				return err
			}
			continue
		}
		if p.pendingCR {
			p.pendingCR = false
			if b[0] == '\n' {
				b = b[1:]
				continue
			}
		}
		i := lineEnd(b)
		if i < 0 {
			if len(p.part)+len(b) > p.max {
				return p.fail(fmt.Errorf("%w: line longer than the %d-byte limit (--max-line-bytes)", errMalformedSSE, p.max))
			}
			p.part = append(p.part, b...)
			return nil
		}
		p.pendingCR = b[i] == '\r'
		line := b[:i]
		if len(p.part) > 0 {
			if len(p.part)+len(line) > p.max {
				return p.fail(fmt.Errorf("%w: line longer than the %d-byte limit (--max-line-bytes)", errMalformedSSE, p.max))
			}
			p.part = append(p.part, line...)
			line = p.part
		} else if len(line) > p.max {
			return p.fail(fmt.Errorf("%w: line longer than the %d-byte limit (--max-line-bytes)", errMalformedSSE, p.max))
		}
		b = b[i+1:]
		dispatch := p.line(line)
		p.part = p.part[:0]
		if p.err != nil {
			return p.fail(p.err)
		}
		if dispatch {
			more := emit(p.data, p.event)
			p.clear()
			if !more {
				p.stopped = true
				return nil
			}
		}
	}
	return nil
}

// begin settles the byte order mark once the first three bytes (or all there are) are in,
// and feeds them on when they are not one.
func (p *ssePush) begin(emit func(data, event []byte) bool) error {
	p.started = true
	h := p.head
	p.head = nil
	if bytes.Equal(h, bom) {
		return nil
	}
	return p.feed(h, emit)
}

// end is the end of the body: a pending event after a complete line is delivered (as
// sseReader does), then io.EOF; a body that ends inside a line gives io.ErrUnexpectedEOF.
func (p *ssePush) end(emit func(data, event []byte) bool) error {
	if p.failed != nil || p.stopped {
		return p.failed
	}
	if !p.started {
		if err := p.begin(emit); err != nil || p.stopped {
			return err
		}
	}
	if len(p.part) > 0 {
		return io.ErrUnexpectedEOF
	}
	if p.hasData && len(p.data) > 0 {
		if !emit(p.data, p.event) {
			p.stopped = true
			return nil
		}
		p.clear()
	}
	return io.EOF
}

func (p *ssePush) fail(err error) error {
	p.failed = err
	return err
}
