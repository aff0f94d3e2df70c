package loadgen

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"golang.org/x/net/http2"
)

// h2Stream is one request on an h2Conn. Its response body is either read (h2Body.Read: the
// bytes wait in buf) or pushed: a sink set by h2Body.push takes every DATA payload on the
// connection's read loop as it arrives.
type h2Stream struct {
	cc      *h2Conn
	id      uint32
	sendWin int64 // the server's window for this stream's DATA (cc.mu)
	// needRelease: the stream still holds its connection slot (cc.mu).
	needRelease bool

	mu            sync.Mutex
	stopWatch     func() bool   // stops the request context's watch
	respCh        chan struct{} // closed at the response headers, or when the stream ends first
	gotResp       bool
	respErr       error
	status        int
	header        http.Header
	contentLength int64
	buf           []byte // body bytes not yet read
	off           int
	unacked       int64 // stream-window bytes consumed and not yet returned
	ended         bool
	endErr        error         // nil: the server ended the stream (END_STREAM)
	endCh         chan struct{} // closed when the stream has ended
	readCh        chan struct{} // a waiting Read is signalled (capacity 1)
	sink          h2Sink
}

// h2Sink consumes a pushed body. Both are called with the stream's lock held, on the
// connection's read loop (or, for what arrived before the sink was set, by push).
type h2Sink interface {
	data(b []byte)
	end(err error)
}

func (s *h2Stream) takeRelease() bool {
	s.cc.mu.Lock()
	defer s.cc.mu.Unlock()
	r := s.needRelease
	s.needRelease = false
	return r
}

// headers takes a HEADERS frame: the response's (informational ones are skipped), or
// trailers, which say nothing a benchmark reads.
func (s *h2Stream) headers(f *http2.MetaHeadersFrame) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gotResp || s.ended {
		return nil
	}
	if f.Truncated {
		return fmt.Errorf("the server's response headers exceeded %d bytes", maxHeaderBytes)
	}
	st := f.PseudoValue("status")
	code, err := strconv.Atoi(st)
	if err != nil || code < 100 || code > 999 {
		return fmt.Errorf("malformed HTTP/2 response: :status %q", clip([]byte(st), 40))
	}
	if code < 200 {
		if code == http.StatusSwitchingProtocols {
			return errors.New("malformed HTTP/2 response: 101 Switching Protocols")
		}
		return nil // informational (100 Continue, 103 Early Hints)
	}
	h := make(http.Header, len(f.Fields))
	for _, hf := range f.RegularFields() {
		k := http.CanonicalHeaderKey(hf.Name)
		h[k] = append(h[k], hf.Value)
	}
	s.status, s.header, s.contentLength, s.gotResp = code, h, -1, true
	if cl, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64); err == nil && cl >= 0 {
		s.contentLength = cl
	}
	close(s.respCh)
	return nil
}

// data takes a DATA payload of a frame of n bytes (padding included); it returns the
// stream-window bytes to give back now.
func (s *h2Stream) data(b []byte, n int) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return 0, nil
	}
	if !s.gotResp {
		return 0, errors.New("malformed HTTP/2 response: DATA before the response headers")
	}
	if s.sink != nil {
		s.sink.data(b)
		s.unacked += int64(n)
	} else {
		if len(s.buf)-s.off+len(b) > h2MaxPending {
			return 0, fmt.Errorf("the server sent more than the stream's %d-byte flow-control window", h2MaxPending)
		}
		s.buf = append(s.buf, b...)
		s.unacked += int64(n - len(b)) // padding counts against the window and is never read
		s.signal()
	}
	return s.ack(), nil
}

// ack returns the stream-window bytes to give back once half the window is used (mu held).
func (s *h2Stream) ack() int64 {
	if s.unacked < h2StreamWindow/2 {
		return 0
	}
	a := s.unacked
	s.unacked = 0
	return a
}

func (s *h2Stream) signal() {
	select {
	case s.readCh <- struct{}{}:
	default:
	}
}

// end ends the stream, once: err nil when the server ended it, else why it broke.
func (s *h2Stream) end(err error) {
	s.cc.remove(s)
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended, s.endErr = true, err
	if !s.gotResp {
		s.respErr = err
		if err == nil {
			s.respErr = errors.New("malformed HTTP/2 response: the stream ended without response headers")
		}
		close(s.respCh)
	}
	if s.sink != nil {
		s.sink.end(err)
	}
	close(s.endCh)
	s.signal()
	stop := s.stopWatch
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// watch keeps the stop of the request context's watch, to run at the end (at once when the
// stream has already ended).
func (s *h2Stream) watch(stop func() bool) {
	s.mu.Lock()
	ended := s.ended
	s.stopWatch = stop
	s.mu.Unlock()
	if ended {
		stop()
	}
}

// reset ends the stream from our side (the request was canceled or is done with it) and
// tells the server with RST_STREAM CANCEL.
func (s *h2Stream) reset(cause error) {
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended {
		return
	}
	if cause == nil {
		cause = errors.New("canceled")
	}
	id := s.id
	s.cc.write(func(fr *http2.Framer) error { return fr.WriteRSTStream(id, http2.ErrCodeCancel) })
	s.end(cause)
}

// h2Body is a response body on an h2Stream.
type h2Body struct{ s *h2Stream }

func (b *h2Body) Read(p []byte) (int, error) {
	s := b.s
	for {
		s.mu.Lock()
		if s.off < len(s.buf) {
			n := copy(p, s.buf[s.off:])
			s.off += n
			if s.off == len(s.buf) {
				s.buf, s.off = s.buf[:0], 0
			}
			s.unacked += int64(n)
			ack, ended, id := s.ack(), s.ended, s.id
			s.mu.Unlock()
			if ack > 0 && !ended {
				s.cc.write(func(fr *http2.Framer) error { return fr.WriteWindowUpdate(id, uint32(ack)) })
			}
			return n, nil
		}
		if s.ended {
			err := s.endErr
			s.mu.Unlock()
			if err == nil {
				return 0, io.EOF
			}
			return 0, err
		}
		s.mu.Unlock()
		<-s.readCh
	}
}

// Close resets a stream that has not ended.
func (b *h2Body) Close() error {
	b.s.reset(errors.New("response body closed"))
	return nil
}

// push hands the rest of the body to sink: what has arrived now, then every DATA payload as
// the read loop takes it, then the end.
func (b *h2Body) push(sink h2Sink) {
	s := b.s
	s.mu.Lock()
	if s.off < len(s.buf) {
		sink.data(s.buf[s.off:])
		s.unacked += int64(len(s.buf) - s.off)
	}
	s.buf, s.off = nil, 0
	if s.ended {
		sink.end(s.endErr)
		s.mu.Unlock()
		return
	}
	s.sink = sink
	ack, id := s.ack(), s.id
	s.mu.Unlock()
	if ack > 0 {
		// What waited here may have filled the window: the server sends on only once it is back.
		s.cc.write(func(fr *http2.Framer) error { return fr.WriteWindowUpdate(id, uint32(ack)) })
	}
}
