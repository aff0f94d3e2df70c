package selfbench

// The long-streams server's HTTP/2 path (h2c with prior knowledge, which is what `--http2`
// speaks to an http:// URL) is written here on golang.org/x/net/http2's Framer and hpack
// rather than served by net/http, for a measured reason: at 20,000 streams over 20
// connections, net/http's server spent more of the process's CPU than the client it is there
// to measure — 12% of all samples in its round-robin write scheduler alone, which scans every
// stream's queue on each frame (1,000 per connection), and a goroutine, two channel hand-offs
// and a write per token — so the bench measured the server. This one keeps no goroutine per
// stream: a stream is an entry in the emitters' timing heap, and each emitter pass appends
// every due token's DATA frame to its connection's buffer and writes each connection once, the
// way an engine's decode step emits a token for every running sequence at once. The figures
// are in loadgen/BENCHMARKS.md.
//
// It implements what the bench's client needs and nothing more: the preface and SETTINGS
// (acknowledged; the client's initial window applied), HEADERS answered with 200 and the
// stream, request bodies read and discarded, send windows honoured (a token that does not fit
// waits for a WINDOW_UPDATE), PING, RST_STREAM and GOAWAY.

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

const (
	// h2StreamsPerConn is the server's SETTINGS_MAX_CONCURRENT_STREAMS (net/http's default is
	// 250), so that tens of thousands of streams need tens of connections.
	h2StreamsPerConn = 1000
	// h2Step is how often an emitter writes the due tokens of HTTP/2 streams: each
	// connection's frames of one step go out in one write.
	h2Step = time.Millisecond
	// h2RecvWindow is the window the server grants each request stream, and the connection
	// is topped up to h2ConnWindow whenever half of it has been used: request bodies are
	// small, and read as they come.
	h2RecvWindow = 1 << 20
	h2ConnWindow = 1 << 30
)

// h2conn is one HTTP/2 connection. Its reader goroutine handles the client's frames; the
// emitters and the reader write through buf under mu.
type h2conn struct {
	s     *longServer
	c     net.Conn
	shard *emitShard // every stream of the connection: one emitter writes it, once a step

	mu      sync.Mutex
	buf     bytes.Buffer
	wfr     *http2.Framer // writes into buf
	hbuf    bytes.Buffer
	henc    *hpack.Encoder // into hbuf
	streams map[uint32]*longStream
	sendWin int64 // the connection's send window
	initWin int64 // the client's SETTINGS_INITIAL_WINDOW_SIZE
	dead    bool
	dirty   bool       // in an emitter's list of connections to flush
	book    []h2booked // tokens in buf whose send time is set when buf is written
	ending  []*longStream
}

type h2booked struct {
	st    *longStream
	first bool
}

// serveH2 runs one connection until the client closes it or the server does.
func (s *longServer) serveH2(c net.Conn, sh *emitShard) {
	hc := &h2conn{s: s, c: c, shard: sh, streams: map[uint32]*longStream{}, sendWin: 65535, initWin: 65535}
	hc.wfr = http2.NewFramer(&hc.buf, nil)
	hc.henc = hpack.NewEncoder(&hc.hbuf)
	if !s.addConn(hc) {
		c.Close()
		return
	}
	defer hc.kill()
	br := bufio.NewReaderSize(c, 4096)
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(br, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	rfr := http2.NewFramer(nil, br)
	rfr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	rfr.MaxHeaderListSize = 1 << 20
	hc.mu.Lock()
	hc.wfr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: h2StreamsPerConn},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2RecvWindow})
	hc.wfr.WriteWindowUpdate(0, h2ConnWindow-65535)
	ok := hc.flushLocked()
	hc.mu.Unlock()
	received := 0 // request body bytes since the connection's window was last topped up
	for ok {
		f, err := rfr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			hc.mu.Lock()
			f.ForeachSetting(func(st http2.Setting) error {
				if st.ID == http2.SettingInitialWindowSize {
					delta := int64(st.Val) - hc.initWin
					hc.initWin = int64(st.Val)
					for _, x := range hc.streams {
						x.win += delta
					}
				}
				return nil
			})
			hc.wfr.WriteSettingsAck()
			ok = hc.flushLocked()
			hc.mu.Unlock()
		case *http2.MetaHeadersFrame:
			ok = s.beginH2(hc, f)
		case *http2.DataFrame:
			if received += int(f.Header().Length); received >= h2ConnWindow/2 {
				hc.mu.Lock()
				hc.wfr.WriteWindowUpdate(0, uint32(received))
				ok = hc.flushLocked()
				hc.mu.Unlock()
				received = 0
			}
		case *http2.WindowUpdateFrame:
			hc.mu.Lock()
			if f.StreamID == 0 {
				hc.sendWin += int64(f.Increment)
			} else if st := hc.streams[f.StreamID]; st != nil {
				st.win += int64(f.Increment)
			}
			hc.mu.Unlock()
		case *http2.PingFrame:
			if !f.IsAck() {
				hc.mu.Lock()
				hc.wfr.WritePing(true, f.Data)
				ok = hc.flushLocked()
				hc.mu.Unlock()
			}
		case *http2.RSTStreamFrame:
			hc.mu.Lock()
			if st := hc.streams[f.StreamID]; st != nil {
				hc.endLocked(st, false)
			}
			hc.mu.Unlock()
		case *http2.GoAwayFrame:
			return
		}
	}
}

// beginH2 answers a request's HEADERS with the response headers and the first token, and
// hands the stream to an emitter. It reports whether the connection is still usable.
func (s *longServer) beginH2(hc *h2conn, f *http2.MetaHeadersFrame) bool {
	st := &longStream{h2: hc, sid: f.StreamID, start: s.now(), tokens: 1}
	for _, hf := range f.RegularFields() {
		switch hf.Name {
		case h2TokensField:
			n, _ := strconv.Atoi(hf.Value)
			st.tokens = max(n, 1)
		case h2GapField:
			st.gap, _ = time.ParseDuration(hf.Value)
		case "x-request-id":
			st.id = hf.Value
		}
	}
	if s.sampled(st.id) {
		st.times = make([]int64, 0, st.tokens)
	}
	s.open.Add(1)
	hc.mu.Lock()
	if hc.dead {
		hc.mu.Unlock()
		s.finish(st.id, nil)
		return false
	}
	st.win = hc.initWin
	hc.streams[st.sid] = st
	hc.hbuf.Reset()
	hc.henc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	hc.henc.WriteField(hpack.HeaderField{Name: "content-type", Value: "text/event-stream"})
	hc.henc.WriteField(hpack.HeaderField{Name: "cache-control", Value: "no-cache"})
	hc.wfr.WriteHeaders(http2.HeadersFrameParam{StreamID: st.sid, BlockFragment: hc.hbuf.Bytes(), EndHeaders: true})
	state := hc.queueLocked(st)
	ok := hc.flushLocked()
	hc.mu.Unlock()
	if !ok || state == h2Ended {
		return ok
	}
	st.due = st.start + int64(st.gap)
	if state == h2Blocked {
		st.due = s.now() + int64(h2Step)
	}
	sh := hc.shard
	sh.mu.Lock()
	idle := sh.w.n == 0
	if idle {
		// The emitter has been asleep and not counting ticks: the wheel resumes now.
		sh.w.tick = max(sh.w.tick, s.now()/int64(h2Step))
	}
	sh.w.insert(st, sh.w.tick)
	sh.mu.Unlock()
	if idle {
		select {
		case sh.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// The request fields the bench sends, as HTTP/2 spells them (lower case).
var (
	h2TokensField = lower(tokensHeader)
	h2GapField    = lower(gapHeader)
)

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// What queueLocked did with a stream's next token.
const (
	h2Queued  = iota // written into buf; more tokens follow
	h2Blocked        // the send window is too small: try again later
	h2Ended          // the last token was written, or the stream is gone
)

// queueLocked writes st's next token (with the end after the last) into buf.
func (hc *h2conn) queueLocked(st *longStream) int {
	if st.gone {
		return h2Ended
	}
	if hc.dead {
		hc.endLocked(st, false)
		return h2Ended
	}
	s := hc.s
	b := s.words[st.sent%len(s.words)]
	last := st.sent+1 == st.tokens
	if last {
		b = append(append([]byte(nil), b...), usage(st.tokens)...)
	}
	if n := int64(len(b)); n > hc.sendWin || n > st.win {
		return h2Blocked
	}
	hc.sendWin -= int64(len(b))
	st.win -= int64(len(b))
	hc.wfr.WriteData(st.sid, last, b)
	st.sent++
	if st.times != nil || st.sent == 1 {
		hc.book = append(hc.book, h2booked{st, st.sent == 1})
	}
	if last {
		hc.ending = append(hc.ending, st)
		return h2Ended
	}
	return h2Queued
}

// endLocked takes st off the connection; booked says whether its times are kept.
func (hc *h2conn) endLocked(st *longStream, booked bool) {
	if st.gone {
		return
	}
	st.gone = true
	delete(hc.streams, st.sid)
	if booked {
		hc.s.finish(st.id, st.times)
	} else {
		hc.s.finish(st.id, nil)
	}
}

// flushLocked writes buf to the connection, booking the send time of the tokens in it first
// (as the HTTP/1.1 path does, the end is booked before it is written: the bench may read the
// bookings as soon as the client has it). It reports whether the connection is usable.
func (hc *h2conn) flushLocked() bool {
	if hc.dead {
		return false
	}
	if hc.buf.Len() == 0 {
		return true
	}
	t := hc.s.now()
	for _, b := range hc.book {
		if b.first {
			hc.s.noteFirst(t)
		}
		if b.st.times != nil {
			b.st.times = append(b.st.times, t)
		}
	}
	for _, st := range hc.ending {
		hc.endLocked(st, true)
	}
	clear(hc.book)
	clear(hc.ending)
	hc.book, hc.ending = hc.book[:0], hc.ending[:0]
	_, err := hc.c.Write(hc.buf.Bytes())
	hc.buf.Reset()
	if err != nil {
		hc.killLocked()
		return false
	}
	return true
}

func (hc *h2conn) kill() {
	hc.mu.Lock()
	hc.killLocked()
	hc.mu.Unlock()
}

// killLocked closes the connection; its streams end unbooked (the emitters drop them).
func (hc *h2conn) killLocked() {
	if hc.dead {
		return
	}
	hc.dead = true
	hc.c.Close()
	for _, st := range hc.streams {
		hc.endLocked(st, false)
	}
}

// wheelSlots is the timing wheel's horizon in h2Step ticks (4.096 s at 1 ms); a stream due
// further ahead goes round again.
const wheelSlots = 4096

// wheel holds HTTP/2 streams by the tick their next token is due in: adding one and taking a
// tick's streams cost O(1), where a heap of 20,000 streams cost 14 levels of comparisons per
// token (7% of the process's CPU, mostly cache misses on the streams compared).
type wheel struct {
	slots [][]*longStream
	spare []*longStream
	tick  int64 // the next tick to emit
	n     int   // streams held
}

// insert adds st at the tick of st.due, or at min if that is earlier.
func (w *wheel) insert(st *longStream, min int64) {
	if w.slots == nil {
		w.slots = make([][]*longStream, wheelSlots)
	}
	t := max((st.due+int64(h2Step)-1)/int64(h2Step), min)
	w.slots[t%wheelSlots] = append(w.slots[t%wheelSlots], st)
	w.n++
}

// take removes and returns the streams of the current tick's slot (those due rounds later
// included: the caller puts them back); the slice is valid until the next take.
func (w *wheel) take() []*longStream {
	if w.slots == nil {
		return nil
	}
	i := w.tick % wheelSlots
	list := w.slots[i]
	w.slots[i] = w.spare[:0]
	w.spare = list
	w.n -= len(list)
	return list
}

// emitH2 writes the due tokens of one shard's HTTP/2 streams once a tick: each pass queues the
// tokens of every tick that has come in their connections' buffers, then writes each
// connection once.
func (s *longServer) emitH2(ctx context.Context, sh *emitShard) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	step := int64(h2Step)
	var dirty []*h2conn
	sh.mu.Lock()
	sh.w.tick = s.now() / step
	sh.mu.Unlock()
	for {
		now := s.now()
		sh.mu.Lock()
		for w := &sh.w; w.tick <= now/step; w.tick++ {
			for _, st := range w.take() {
				if (st.due+step-1)/step > w.tick { // due rounds later
					w.insert(st, w.tick+1)
					continue
				}
				hc := st.h2
				hc.mu.Lock()
				state := hc.queueLocked(st)
				if !hc.dirty {
					hc.dirty = true
					dirty = append(dirty, hc)
				}
				hc.mu.Unlock()
				switch state {
				case h2Queued:
					st.due = st.start + int64(st.sent)*int64(st.gap)
					w.insert(st, w.tick+1)
				case h2Blocked:
					st.due = now + step
					w.insert(st, w.tick+1)
				}
			}
		}
		clear(sh.w.spare)
		idle := sh.w.n == 0
		sh.mu.Unlock()
		for _, hc := range dirty {
			hc.mu.Lock()
			hc.dirty = false
			hc.flushLocked()
			hc.mu.Unlock()
		}
		clear(dirty)
		dirty = dirty[:0]
		wait := time.Hour
		if !idle {
			wait = time.Duration((now/step+1)*step - s.now())
		}
		if !sh.sleep(ctx, timer, wait) {
			return
		}
	}
}
