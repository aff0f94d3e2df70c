package loadgen

// The HTTP/2 client of --http2 (issue 18), written on golang.org/x/net/http2's Framer and
// hpack rather than with its Transport, for a measured reason. At 20,000 streams of 10 tokens
// a second (llmbench bench --scenario long-streams --http2 --in-flight 20000, 2 cores, the
// server in the process) the Transport cost about 9 µs of CPU a token all in: its connection
// read loop 23% of the profile, the stream readers it wakes 49%. Every DATA frame there is a
// new frame struct (the Transport does not reuse frames: 130 MB of 553 MB allocated), a copy
// into the stream's pipe, a signal and a wake of the stream's reader goroutine, which then
// parses one event; and every request holds two goroutines (RoundTrip's and the reader), so
// a collection scans 40,000 stacks, and a tick of the server's, which carries tokens for
// thousands of streams at once, wakes thousands of goroutines ahead of the dispatcher.
//
// Here a streamed response is parsed where its frames are read: the connection's read loop
// hands each DATA payload to the stream's ssePush and streamState (the same parser and
// accounting as the pull path), so a token costs no goroutine switch, frames are reused, and a
// request's goroutine sleeps from its headers to its end. Everything else a request can meet
// is a plain body read (error responses, whole JSON, embeddings). The protocol is RFC 9113's
// client side for one benchmark target: SETTINGS honoured both ways, flow control (the server's
// windows bound what is sent, ours are returned as frames are consumed), streams over the
// server's MAX_CONCURRENT_STREAMS open another connection (dials shared by the requests
// waiting on them), RST_STREAM both ways (a canceled or timed-out request resets its stream),
// PING answered, GOAWAY honoured (requests the server did not process are retried on a new
// connection, at most twice), PUSH_PROMISE refused (SETTINGS_ENABLE_PUSH 0). TestH2Client*
// exercise each against servers that misbehave on purpose.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

const (
	// h2StreamWindow is the receive window of a stream (SETTINGS_INITIAL_WINDOW_SIZE): a
	// pushed stream returns its window at once, a read one as its body is read.
	h2StreamWindow = 1 << 20
	// h2ConnWindow is the connection's receive window.
	h2ConnWindow = 1 << 30
	// h2DefaultMaxStreams stands for a server that sets no SETTINGS_MAX_CONCURRENT_STREAMS.
	h2DefaultMaxStreams = 1000
	// h2SettingsTimeout bounds the wait for the server's first SETTINGS on a new connection,
	// h2WriteTimeout one write to a server that does not read.
	h2SettingsTimeout = 10 * time.Second
	h2WriteTimeout    = 30 * time.Second
	// h2Retries is how many times a request the server did not process (GOAWAY past it,
	// REFUSED_STREAM) is sent again on another connection.
	h2Retries = 2
	// h2MaxPending bounds the bytes of a stream buffered ahead of the reader (it also holds
	// the window the server may use).
	h2MaxPending = h2StreamWindow
)

// errH2Unprocessed marks a request the server says it did not process: safe to send again.
var errH2Unprocessed = errors.New("the server did not process the request")

// h2Transport is an http.RoundTripper speaking HTTP/2 only: h2c with prior knowledge over
// dial, or TLS with ALPN h2 when tlsConf is set.
type h2Transport struct {
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	tlsConf *tls.Config // nil: h2c

	mu      sync.Mutex
	conns   map[string][]*h2Conn
	dialing map[string]*h2Dial
}

type h2Dial struct {
	done chan struct{}
	err  error
	// canceled: the dial failed because the request that made it was canceled (its connect
	// timeout, say); the requests waiting on it then dial again themselves.
	canceled bool
}

func newH2Transport(dial func(ctx context.Context, network, addr string) (net.Conn, error), tlsConf *tls.Config) *h2Transport {
	return &h2Transport{dial: dial, tlsConf: tlsConf, conns: map[string][]*h2Conn{}, dialing: map[string]*h2Dial{}}
}

// CloseIdleConnections closes the connections with no stream open.
func (t *h2Transport) CloseIdleConnections() {
	t.mu.Lock()
	var idle []*h2Conn
	for _, cs := range t.conns {
		for _, cc := range cs {
			cc.mu.Lock()
			if cc.active == 0 {
				idle = append(idle, cc)
			}
			cc.mu.Unlock()
		}
	}
	t.mu.Unlock()
	for _, cc := range idle {
		cc.fail(errors.New("connection closed by the client"))
	}
}

func (t *h2Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		port := "80"
		if req.URL.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(req.URL.Hostname(), port)
	}
	for attempt := 0; ; attempt++ {
		cc, err := t.conn(req.Context(), addr)
		if err != nil {
			return nil, err
		}
		if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.GotConn != nil {
			// The connect wait ends here, as net/http reports it (phases.go).
			tr.GotConn(httptrace.GotConnInfo{Conn: cc.nc})
		}
		resp, err := cc.roundTrip(req, body)
		if errors.Is(err, errH2Unprocessed) && attempt < h2Retries && req.Context().Err() == nil {
			continue
		}
		return resp, err
	}
}

// conn returns a connection to addr with a stream reserved on it, dialing one when every
// connection is full; requests that find a dial in progress wait for it.
func (t *h2Transport) conn(ctx context.Context, addr string) (*h2Conn, error) {
	for {
		t.mu.Lock()
		for _, cc := range t.conns[addr] {
			if cc.reserve() {
				t.mu.Unlock()
				return cc, nil
			}
		}
		if d := t.dialing[addr]; d != nil {
			t.mu.Unlock()
			select {
			case <-d.done:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			if d.err != nil && !d.canceled && ctx.Err() == nil {
				return nil, d.err
			}
			continue
		}
		d := &h2Dial{done: make(chan struct{})}
		t.dialing[addr] = d
		t.mu.Unlock()
		cc, err := t.newConn(ctx, addr)
		// The dialer takes the new connection's first stream (a server that allows none
		// would otherwise have every request dial again and again).
		if err == nil && !cc.reserve() {
			cc.fail(errors.New("the server allows no streams"))
			err = errors.New("malformed HTTP/2 from the server: SETTINGS_MAX_CONCURRENT_STREAMS 0 on a new connection: it allows no request")
		}
		t.mu.Lock()
		delete(t.dialing, addr)
		if err == nil {
			t.conns[addr] = append(t.conns[addr], cc)
		}
		t.mu.Unlock()
		d.err, d.canceled = err, err != nil && ctx.Err() != nil
		close(d.done)
		return cc, err
	}
}

func (t *h2Transport) forget(cc *h2Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cs := t.conns[cc.addr]
	for i, c := range cs {
		if c == cc {
			t.conns[cc.addr] = append(cs[:i:i], cs[i+1:]...)
			break
		}
	}
	if len(t.conns[cc.addr]) == 0 {
		delete(t.conns, cc.addr)
	}
}

func (t *h2Transport) newConn(ctx context.Context, addr string) (*h2Conn, error) {
	nc, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if t.tlsConf != nil {
		conf := t.tlsConf.Clone()
		conf.NextProtos = []string{"h2"}
		if conf.ServerName == "" {
			conf.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(nc, conf)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake offering only HTTP/2 (--http2): %w", err)
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			tc.Close()
			return nil, fmt.Errorf("the server did not agree to HTTP/2 (ALPN %q); run without --http2", p)
		}
		nc = tc
	}
	cc := &h2Conn{t: t, addr: addr, nc: nc, streams: map[uint32]*h2Stream{}, nextID: 1,
		maxStreams: h2DefaultMaxStreams, sendWin: 65535, peerStreamWin: 65535, maxFrame: 16384, tableSize: 4096, encTableSize: 4096,
		winCh: make(chan struct{}), settings: make(chan struct{}), readDone: make(chan struct{})}
	cc.bw = bufio.NewWriterSize(nc, 32<<10)
	cc.fr = http2.NewFramer(cc.bw, bufio.NewReaderSize(nc, 64<<10))
	cc.fr.SetReuseFrames()
	cc.fr.SetMaxReadFrameSize(16384) // the default SETTINGS_MAX_FRAME_SIZE, which we keep
	cc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	cc.fr.MaxHeaderListSize = maxHeaderBytes
	cc.henc = hpack.NewEncoder(&cc.hbuf)
	cc.wmu.Lock()
	cc.bw.WriteString(http2.ClientPreface)
	cc.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2StreamWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: maxHeaderBytes},
	)
	cc.fr.WriteWindowUpdate(0, h2ConnWindow-65535)
	err = cc.flush()
	cc.wmu.Unlock()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("HTTP/2 connection preface: %w", err)
	}
	go cc.readLoop()
	timer := time.NewTimer(h2SettingsTimeout)
	defer timer.Stop()
	select {
	case <-cc.settings:
		return cc, nil
	case <-cc.readDone:
		return nil, fmt.Errorf("HTTP/2 connection ended before the server's SETTINGS: %w", cc.err)
	case <-ctx.Done():
		cc.fail(context.Cause(ctx))
		return nil, context.Cause(ctx)
	case <-timer.C:
		err := fmt.Errorf("no HTTP/2 SETTINGS from the server within %s (does it speak HTTP/2 with prior knowledge? run without --http2)", h2SettingsTimeout)
		cc.fail(err)
		return nil, err
	}
}

// h2Conn is one HTTP/2 connection. mu guards the stream table, the counts and the send
// windows; wmu the writer, the header encoder and the order of new stream ids.
type h2Conn struct {
	t    *h2Transport
	addr string
	nc   net.Conn
	fr   *http2.Framer
	bw   *bufio.Writer

	wmu  sync.Mutex
	henc *hpack.Encoder
	hbuf bytes.Buffer

	mu            sync.Mutex
	streams       map[uint32]*h2Stream
	nextID        uint32
	active        int // streams open or reserved
	maxStreams    int
	goingAway     bool
	broken        bool
	err           error
	sendWin       int64 // the server's connection window for our DATA
	peerStreamWin int64 // the server's SETTINGS_INITIAL_WINDOW_SIZE
	maxFrame      int
	winCh         chan struct{} // closed and replaced when a send window grows
	recvUnacked   int64         // connection-window bytes consumed and not returned (read loop)
	gotSettings   bool
	tableSize     uint32 // the server's SETTINGS_HEADER_TABLE_SIZE
	encTableSize  uint32 // the limit the encoder has (wmu)

	settings chan struct{} // closed at the server's first SETTINGS
	readDone chan struct{} // closed when the read loop has ended
}

// reserve takes a stream slot; false when the connection cannot take another stream.
func (cc *h2Conn) reserve() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.broken || cc.goingAway || cc.active >= cc.maxStreams || cc.nextID > 1<<31-1 {
		return false
	}
	cc.active++
	return true
}

// release gives a stream slot back; a connection going away closes with its last stream.
func (cc *h2Conn) release() {
	cc.mu.Lock()
	cc.active--
	last := cc.goingAway && cc.active == 0
	cc.mu.Unlock()
	if last {
		cc.fail(errors.New("connection closed after the server's GOAWAY"))
	}
}

func (cc *h2Conn) flush() error {
	cc.nc.SetWriteDeadline(time.Now().Add(h2WriteTimeout))
	return cc.bw.Flush()
}

// write runs fn on the framer with the write lock held, then flushes; a write that fails
// breaks the connection.
func (cc *h2Conn) write(fn func(fr *http2.Framer) error) error {
	cc.wmu.Lock()
	err := fn(cc.fr)
	if err == nil {
		err = cc.flush()
	}
	cc.wmu.Unlock()
	if err != nil {
		cc.fail(fmt.Errorf("writing to the connection: %w", err))
	}
	return err
}

// fail breaks the connection: every stream on it ends with err.
func (cc *h2Conn) fail(err error) {
	cc.mu.Lock()
	if cc.broken {
		cc.mu.Unlock()
		return
	}
	cc.broken, cc.err = true, err
	streams := cc.streams
	cc.streams = map[uint32]*h2Stream{}
	close(cc.winCh)
	cc.mu.Unlock()
	cc.t.forget(cc)
	cc.nc.Close()
	for _, s := range streams {
		s.end(fmt.Errorf("HTTP/2 connection lost: %w", err))
	}
}

// roundTrip sends req on a reserved stream and waits for its response headers.
func (cc *h2Conn) roundTrip(req *http.Request, body []byte) (*http.Response, error) {
	ctx := req.Context()
	s := &h2Stream{cc: cc, respCh: make(chan struct{}), endCh: make(chan struct{}), readCh: make(chan struct{}, 1), needRelease: true}
	hdrs, err := encodeRequest(req, len(body))
	if err != nil {
		cc.release()
		return nil, err
	}
	cc.wmu.Lock()
	cc.mu.Lock()
	if cc.broken {
		err := cc.err
		cc.mu.Unlock()
		cc.wmu.Unlock()
		cc.release()
		return nil, fmt.Errorf("%w: HTTP/2 connection lost: %w", errH2Unprocessed, err)
	}
	s.id = cc.nextID
	cc.nextID += 2
	s.sendWin = cc.peerStreamWin
	cc.streams[s.id] = s
	maxFrame, tableSize := cc.maxFrame, cc.tableSize
	cc.mu.Unlock()
	err = cc.writeHeaders(s.id, hdrs, maxFrame, tableSize, len(body) == 0)
	// As much of the body as the windows allow goes with the headers, in one write; the rest
	// as the server opens its windows.
	watching := false
	for {
		if err == nil && len(body) > 0 {
			var sent int
			sent, err = cc.writeData(s, body, maxFrame)
			body = body[sent:]
		}
		if err == nil {
			err = cc.flush()
		}
		cc.wmu.Unlock()
		if err != nil {
			cc.fail(fmt.Errorf("writing to the connection: %w", err))
			return nil, fmt.Errorf("sending the request: %w", err)
		}
		if !watching {
			s.watch(context.AfterFunc(ctx, func() { s.reset(context.Cause(ctx)) }))
			watching = true
		}
		if len(body) == 0 {
			break
		}
		if err := cc.awaitWindow(ctx, s); err != nil {
			s.reset(err)
			return nil, err
		}
		cc.wmu.Lock()
	}
	select {
	case <-s.respCh:
	case <-ctx.Done():
		s.reset(context.Cause(ctx))
		<-s.respCh
	}
	if s.respErr != nil {
		return nil, s.respErr
	}
	return &http.Response{Status: strconv.Itoa(s.status) + " " + http.StatusText(s.status), StatusCode: s.status,
		Proto: "HTTP/2.0", ProtoMajor: 2, Header: s.header, Body: &h2Body{s: s}, ContentLength: s.contentLength,
		Request: req}, nil
}

// writeHeaders writes stream id's header block (wmu held): hdrs encoded with the connection's
// HPACK encoder (its dynamic table resized to the peer's tableSize first), in a HEADERS frame
// and as many CONTINUATION frames as maxFrame requires; endStream marks a request without a
// body.
func (cc *h2Conn) writeHeaders(id uint32, hdrs []hpack.HeaderField, maxFrame int, tableSize uint32, endStream bool) error {
	if tableSize != cc.encTableSize {
		cc.henc.SetMaxDynamicTableSizeLimit(tableSize)
		cc.encTableSize = tableSize
	}
	cc.hbuf.Reset()
	for _, f := range hdrs {
		cc.henc.WriteField(f)
	}
	block := cc.hbuf.Bytes()
	first := true
	for first || len(block) > 0 {
		n := min(len(block), maxFrame)
		frag, end := block[:n], n == len(block)
		var err error
		if first {
			err = cc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: frag, EndStream: endStream, EndHeaders: end})
		} else {
			err = cc.fr.WriteContinuation(id, end, frag)
		}
		if err != nil {
			return err
		}
		block, first = block[n:], false
	}
	return nil
}

// writeData writes as much of body as the send windows allow (wmu held), taking it from
// them; it returns the bytes written.
func (cc *h2Conn) writeData(s *h2Stream, body []byte, maxFrame int) (int, error) {
	sent := 0
	for sent < len(body) {
		cc.mu.Lock()
		n := int(min(int64(len(body)-sent), int64(maxFrame), cc.sendWin, s.sendWin))
		if n > 0 {
			cc.sendWin -= int64(n)
			s.sendWin -= int64(n)
		}
		cc.mu.Unlock()
		if n <= 0 {
			return sent, nil
		}
		if err := cc.fr.WriteData(s.id, sent+n == len(body), body[sent:sent+n]); err != nil {
			return sent, err
		}
		sent += n
	}
	return sent, nil
}

// awaitWindow waits until both send windows of s are open, the stream ended or ctx is done.
func (cc *h2Conn) awaitWindow(ctx context.Context, s *h2Stream) error {
	for {
		cc.mu.Lock()
		open, ch, broken := cc.sendWin > 0 && s.sendWin > 0, cc.winCh, cc.broken
		cc.mu.Unlock()
		switch {
		case broken:
			return fmt.Errorf("HTTP/2 connection lost while sending the request body: %w", cc.err)
		case open:
			return nil
		}
		select {
		case <-ch:
		case <-s.endCh:
			return fmt.Errorf("the server ended the stream before the request body was sent: %w", s.endErr)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// grow wakes the senders waiting for the send windows to widen (mu held). A broken
// connection has closed winCh for good.
func (cc *h2Conn) grow() {
	if cc.broken {
		return
	}
	close(cc.winCh)
	cc.winCh = make(chan struct{})
}

// encodeRequest lists req's header fields as HTTP/2 sends them.
func encodeRequest(req *http.Request, bodyLen int) ([]hpack.HeaderField, error) {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	path := req.URL.RequestURI()
	fs := []hpack.HeaderField{
		{Name: ":method", Value: req.Method}, {Name: ":scheme", Value: req.URL.Scheme},
		{Name: ":authority", Value: host}, {Name: ":path", Value: path},
	}
	ua := false
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, fmt.Errorf("invalid HTTP header name %q", k)
		}
		lk := strings.ToLower(k)
		switch lk {
		case "connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade", "host", "content-length":
			continue // connection-specific, or set below
		case "user-agent":
			ua = true
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, fmt.Errorf("invalid HTTP header value for header %q", k)
			}
			fs = append(fs, hpack.HeaderField{Name: lk, Value: v, Sensitive: lk == "authorization" || lk == "x-api-key"})
		}
	}
	if !ua {
		fs = append(fs, hpack.HeaderField{Name: "user-agent", Value: "Go-http-client/2.0"})
	}
	if bodyLen > 0 || req.Method == http.MethodPost {
		fs = append(fs, hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(bodyLen)})
	}
	return fs, nil
}

// readLoop reads the connection's frames until it breaks.
func (cc *h2Conn) readLoop() {
	defer close(cc.readDone)
	for {
		f, err := cc.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				cc.resetByUs(se.StreamID, se.Code, fmt.Errorf("malformed HTTP/2 response headers: %v", se))
				continue
			}
			var ce http2.ConnectionError
			_, inHeaders := f.(*http2.MetaHeadersFrame)
			switch {
			case inHeaders && errors.As(err, &ce):
				err = fmt.Errorf("malformed HTTP/2 from the server: response headers over the %d-byte limit, or invalid (%w)", maxHeaderBytes, err)
			case errors.Is(err, http2.ErrFrameTooLarge):
				err = fmt.Errorf("malformed HTTP/2 from the server: a frame over the %d-byte SETTINGS_MAX_FRAME_SIZE", 16384)
			case errors.As(err, &ce):
				err = fmt.Errorf("malformed HTTP/2 from the server: %w", err)
			}
			cc.fail(err)
			return
		}
		if err := cc.handle(f); err != nil {
			cc.write(func(fr *http2.Framer) error { return fr.WriteGoAway(0, http2.ErrCodeProtocol, nil) })
			cc.fail(fmt.Errorf("malformed HTTP/2 from the server: %w", err))
			return
		}
	}
}

// handle acts on one frame; an error is the server's protocol error, which ends the connection.
func (cc *h2Conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		if err := cc.settingsFrom(f); err != nil {
			return err
		}
		return cc.write(func(fr *http2.Framer) error { return fr.WriteSettingsAck() })
	case *http2.MetaHeadersFrame:
		s := cc.stream(f.StreamID)
		if s == nil {
			return nil // a stream we reset
		}
		if err := s.headers(f); err != nil {
			cc.resetByUs(f.StreamID, http2.ErrCodeProtocol, err)
			return nil
		}
		if f.StreamEnded() {
			s.end(nil)
		}
	case *http2.DataFrame:
		n := int64(f.Header().Length)
		if s := cc.stream(f.StreamID); s != nil {
			ack, err := s.data(f.Data(), int(n))
			switch {
			case err != nil:
				cc.resetByUs(f.StreamID, http2.ErrCodeProtocol, err)
			case f.StreamEnded():
				s.end(nil)
			case ack > 0:
				ignoreWriteErr(cc.write(func(fr *http2.Framer) error { return fr.WriteWindowUpdate(f.StreamID, uint32(ack)) }))
			}
		}
		cc.recvUnacked += n // the read loop's own
		if ack := cc.recvUnacked; ack >= h2ConnWindow/2 {
			cc.recvUnacked = 0
			return ignoreWriteErr(cc.write(func(fr *http2.Framer) error { return fr.WriteWindowUpdate(0, uint32(ack)) }))
		}
	case *http2.RSTStreamFrame:
		s := cc.stream(f.StreamID)
		if s == nil {
			return nil
		}
		cc.remove(s)
		err := fmt.Errorf("the server reset the stream (%v)", f.ErrCode)
		if f.ErrCode == http2.ErrCodeRefusedStream {
			err = fmt.Errorf("%w: %w", errH2Unprocessed, err)
		}
		s.end(err)
	case *http2.GoAwayFrame:
		cc.goAway(f)
	case *http2.PingFrame:
		if !f.IsAck() {
			data := f.Data
			return ignoreWriteErr(cc.write(func(fr *http2.Framer) error { return fr.WritePing(true, data) }))
		}
	case *http2.WindowUpdateFrame:
		cc.mu.Lock()
		defer cc.mu.Unlock()
		if f.StreamID == 0 {
			if cc.sendWin+int64(f.Increment) > 1<<31-1 {
				return errors.New("the server overflowed the connection's flow-control window")
			}
			cc.sendWin += int64(f.Increment)
		} else if s := cc.streams[f.StreamID]; s != nil {
			s.sendWin += int64(f.Increment)
		}
		cc.grow()
	case *http2.PushPromiseFrame:
		return errors.New("the server sent PUSH_PROMISE, which the client disabled (SETTINGS_ENABLE_PUSH 0)")
	}
	return nil
}

// ignoreWriteErr: a failed write has already broken the connection (write says so to every
// stream); the read loop then ends on the closed connection.
func ignoreWriteErr(error) error { return nil }

func (cc *h2Conn) settingsFrom(f *http2.SettingsFrame) error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingMaxConcurrentStreams:
			cc.maxStreams = int(min(s.Val, 1<<20))
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - cc.peerStreamWin
			cc.peerStreamWin = int64(s.Val)
			for _, st := range cc.streams {
				st.sendWin += delta
			}
		case http2.SettingMaxFrameSize:
			cc.maxFrame = int(s.Val)
		case http2.SettingHeaderTableSize:
			cc.tableSize = s.Val // applied by the next request, which holds the encoder
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("the server's SETTINGS: %w", err)
	}
	cc.grow()
	if !cc.gotSettings {
		cc.gotSettings = true
		close(cc.settings)
	}
	return nil
}

func (cc *h2Conn) stream(id uint32) *h2Stream {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.streams[id]
}

// remove takes s out of the stream table (once) and gives its slot back.
func (cc *h2Conn) remove(s *h2Stream) {
	cc.mu.Lock()
	_, ok := cc.streams[s.id]
	delete(cc.streams, s.id)
	cc.mu.Unlock()
	if ok && s.takeRelease() {
		cc.release()
	}
}

// resetByUs ends stream id with err and tells the server (RST_STREAM code).
func (cc *h2Conn) resetByUs(id uint32, code http2.ErrCode, err error) {
	s := cc.stream(id)
	cc.write(func(fr *http2.Framer) error { return fr.WriteRSTStream(id, code) })
	if s != nil {
		cc.remove(s)
		s.end(err)
	}
}

// goAway stops new streams on the connection; the streams the server did not process end
// with errH2Unprocessed, to be sent again elsewhere.
func (cc *h2Conn) goAway(f *http2.GoAwayFrame) {
	cc.mu.Lock()
	cc.goingAway = true
	var gone []*h2Stream
	for id, s := range cc.streams {
		if id > f.LastStreamID {
			gone = append(gone, s)
			delete(cc.streams, id)
		}
	}
	idle := cc.active == 0
	cc.mu.Unlock()
	cc.t.forget(cc)
	for _, s := range gone {
		if s.takeRelease() {
			cc.release()
		}
		s.end(fmt.Errorf("%w: the server is going away (GOAWAY %v)", errH2Unprocessed, f.ErrCode))
	}
	if idle {
		cc.fail(errors.New("connection closed after the server's GOAWAY"))
	}
}
