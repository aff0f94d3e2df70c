package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// rawH2 is the server end of one HTTP/2 connection, frame by frame, for servers that
// misbehave on purpose.
type rawH2 struct {
	t       *testing.T
	conn    net.Conn
	fr      *http2.Framer
	enc     *hpack.Encoder
	buf     bytes.Buffer
	connWin int64 // the client's connection window, as its WINDOW_UPDATEs so far set it
}

// serveRawH2 accepts connections on loopback; each reads the client preface and its
// SETTINGS, sends settings, and runs serve with the connection's index (from 0).
func serveRawH2(t *testing.T, settings []http2.Setting, serve func(c *rawH2, index int)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				c := &rawH2{t: t, conn: conn, fr: http2.NewFramer(conn, conn), connWin: 65535}
				c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
				c.enc = hpack.NewEncoder(&c.buf)
				pre := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(conn, pre); err != nil || string(pre) != http2.ClientPreface {
					t.Errorf("client preface %q, %v", pre, err)
					return
				}
				if err := c.fr.WriteSettings(settings...); err != nil {
					return
				}
				serve(c, i)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// request reads frames until a request has arrived whole, answering SETTINGS; it returns the
// stream id and the body (0 when the connection ended first).
func (c *rawH2) request() (uint32, []byte) {
	var body []byte
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return 0, nil
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.fr.WriteSettingsAck()
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				c.connWin += int64(f.Increment)
			}
		case *http2.MetaHeadersFrame:
			if f.StreamEnded() {
				return f.StreamID, body
			}
		case *http2.DataFrame:
			body = append(body, f.Data()...)
			if f.StreamEnded() {
				return f.StreamID, body
			}
		}
	}
}

// headers writes a header block, in CONTINUATION frames past 16 KB.
func (c *rawH2) headers(id uint32, end bool, fields ...string) {
	c.buf.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		c.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	block := c.buf.Bytes()
	n := min(len(block), 16384)
	c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block[:n], EndHeaders: n == len(block), EndStream: end})
	for block = block[n:]; len(block) > 0; block = block[n:] {
		n = min(len(block), 16384)
		c.fr.WriteContinuation(id, n == len(block), block[:n])
	}
}

func (c *rawH2) sse(id uint32) {
	c.headers(id, false, ":status", "200", "content-type", "text/event-stream")
}

func (c *rawH2) token(id uint32, text string) {
	c.fr.WriteData(id, false, []byte(`data: {"choices":[{"text":"`+text+`"}]}`+"\n\n"))
}

func (c *rawH2) done(id uint32) { c.fr.WriteData(id, true, []byte("data: [DONE]\n\n")) }

// answer streams one token on stream id, ends it, and waits for the client's reset.
func (c *rawH2) answer(id uint32) {
	c.sse(id)
	c.token(id, "a")
	c.done(id)
	c.awaitReset(id)
}

// awaitReset reads frames until the client resets stream id; false when it never does.
func (c *rawH2) awaitReset(id uint32) (http2.ErrCode, bool) {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return 0, false
		}
		if r, ok := f.(*http2.RSTStreamFrame); ok && r.StreamID == id {
			return r.ErrCode, true
		}
	}
}

func h2Target(url string) Target {
	tg := target(url)
	tg.HTTP2 = true
	tg.Timeouts.Total = 10 * time.Second
	return tg
}

// TestH2ClientStreamsTokens: a streamed response read in place, frame by frame, counts its
// tokens and chunks; an event split across DATA frames parses, and two events in one frame
// are two chunks of the same time. A PING mid-request is answered with its data.
func TestH2ClientStreamsTokens(t *testing.T) {
	url := serveRawH2(t, nil, func(c *rawH2, _ int) {
		id, body := c.request()
		if !json.Valid(body) {
			t.Errorf("request body %q", body)
		}
		ping := [8]byte{'l', 'l', 'm', 'b', 'e', 'n', 'c', 'h'}
		c.fr.WritePing(false, ping)
		for acked := false; !acked; {
			f, err := c.fr.ReadFrame()
			if err != nil {
				t.Errorf("no PING ack: %v", err)
				return
			}
			if p, ok := f.(*http2.PingFrame); ok {
				acked = p.IsAck() && p.Data == ping
				if !acked {
					t.Errorf("PING answered with ack %v, data %q", p.IsAck(), p.Data[:])
					return
				}
			}
		}
		c.sse(id)
		c.token(id, "a")
		c.fr.WriteData(id, false, []byte(`data: {"choices":[{"te`))
		c.fr.WriteData(id, false, []byte(`xt":"b"}]}`+"\n\n"+`data: {"choices":[{"text":"c"}]}`+"\n\n"))
		c.done(id)
		c.awaitReset(id) // until the client hangs up
	})
	rec := runOne(t, Options{Target: h2Target(url)}, oneReq("a", 3))
	if !rec.OK() || rec.OutputTokens != 3 || len(rec.Chunks) != 3 || rec.Chunks[1].T != rec.Chunks[2].T {
		t.Fatalf("record: %q %q, %d tokens in chunks %+v; want 3 tokens in 3 chunks, the last two at once", rec.Failure, rec.Error, rec.OutputTokens, rec.Chunks)
	}
}

// TestH2ClientServerReset: a stream the server resets mid-way is stream_broken and says so.
func TestH2ClientServerReset(t *testing.T) {
	url := serveRawH2(t, nil, func(c *rawH2, _ int) {
		id, _ := c.request()
		c.sse(id)
		c.token(id, "a")
		c.fr.WriteRSTStream(id, http2.ErrCodeInternal)
		c.request()
	})
	rec := runOne(t, Options{Target: h2Target(url)}, oneReq("a", 3))
	if rec.Failure != metrics.FailStreamBroken || !strings.Contains(rec.Error, "reset the stream (INTERNAL_ERROR)") || rec.OutputTokens != 1 {
		t.Fatalf("record: %q %q, %d tokens", rec.Failure, rec.Error, rec.OutputTokens)
	}
}

// TestH2ClientGoAwayRetries: a request the server's GOAWAY says it did not process is sent
// again on a new connection.
func TestH2ClientGoAwayRetries(t *testing.T) {
	var served atomic.Int32
	url := serveRawH2(t, nil, func(c *rawH2, i int) {
		id, _ := c.request()
		if i == 0 {
			c.fr.WriteGoAway(0, http2.ErrCodeNo, nil)
			c.request()
			return
		}
		served.Add(1)
		c.answer(id)
	})
	rec, res := runOneResult(t, Options{Target: h2Target(url)}, oneReq("a", 1))
	if !rec.OK() || served.Load() != 1 || res.Connections != 2 {
		t.Fatalf("record %+v, served %d, %d connections; want one success on the second connection", rec, served.Load(), res.Connections)
	}
}

// TestH2ClientHonoursTheServersWindow: with a 16-byte stream window the body goes 16 bytes
// at a time, each after the server gives the window back, and arrives whole.
func TestH2ClientHonoursTheServersWindow(t *testing.T) {
	const win = 16
	url := serveRawH2(t, []http2.Setting{{ID: http2.SettingInitialWindowSize, Val: win}}, func(c *rawH2, _ int) {
		var body []byte
		var id uint32
		for {
			f, err := c.fr.ReadFrame()
			if err != nil {
				t.Errorf("reading the request: %v", err)
				return
			}
			if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
				c.fr.WriteSettingsAck()
			}
			d, ok := f.(*http2.DataFrame)
			if !ok {
				continue
			}
			id = d.StreamID
			if len(d.Data()) > win {
				t.Errorf("a DATA frame of %d bytes in a %d-byte window", len(d.Data()), win)
			}
			body = append(body, d.Data()...)
			if d.StreamEnded() {
				break
			}
			c.fr.WriteWindowUpdate(0, uint32(len(d.Data())))
			c.fr.WriteWindowUpdate(id, uint32(len(d.Data())))
		}
		if !json.Valid(body) || len(body) <= 4*win {
			t.Errorf("request body of %d bytes: %q", len(body), body)
		}
		c.answer(id)
	})
	rec := runOne(t, Options{Target: h2Target(url)}, oneReq("a", 1))
	if !rec.OK() {
		t.Fatalf("record: %q %q", rec.Failure, rec.Error)
	}
}

// TestH2ClientResetsATimedOutStream: the idle timeout ends the request as timeout_idle and
// resets its stream (RST_STREAM CANCEL), so the server stops generating.
func TestH2ClientResetsATimedOutStream(t *testing.T) {
	reset := make(chan http2.ErrCode, 1)
	url := serveRawH2(t, nil, func(c *rawH2, _ int) {
		id, _ := c.request()
		c.sse(id)
		c.token(id, "a")
		if code, ok := c.awaitReset(id); ok {
			reset <- code
		}
	})
	tg := h2Target(url)
	tg.Timeouts.Idle = 100 * time.Millisecond
	rec := runOne(t, Options{Target: tg}, oneReq("a", 5))
	if rec.Failure != metrics.FailTimeoutIdle {
		t.Fatalf("record: %q %q, want timeout_idle", rec.Failure, rec.Error)
	}
	select {
	case code := <-reset:
		if code != http2.ErrCodeCancel {
			t.Fatalf("stream reset with %v, want CANCEL", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server saw no RST_STREAM for the timed-out stream")
	}
}

// TestH2ClientHostileServers: a server that breaks the protocol gives each request a record
// with the right kind and a message that says what happened; none hangs or panics.
func TestH2ClientHostileServers(t *testing.T) {
	cases := []struct {
		name  string
		serve func(c *rawH2, id uint32)
		kind  metrics.FailureKind
		msg   string
	}{
		{"data before headers", func(c *rawH2, id uint32) { c.token(id, "a") }, metrics.FailMalformed, "DATA before the response headers"},
		{"status not a number", func(c *rawH2, id uint32) { c.headers(id, false, ":status", "2oo") }, metrics.FailMalformed, `:status "2oo"`},
		{"headers too large", func(c *rawH2, id uint32) {
			fields := []string{":status", "200"}
			for i := range 2 * maxHeaderBytes / 1024 {
				fields = append(fields, fmt.Sprint("x-big-", i), strings.Repeat("x", 1024))
			}
			c.headers(id, false, fields...)
		}, metrics.FailMalformed, "response headers over the 65536-byte limit"},
		{"push promise", func(c *rawH2, id uint32) {
			c.fr.WritePushPromise(http2.PushPromiseParam{StreamID: id, PromiseID: 2, EndHeaders: true})
		}, metrics.FailMalformed, "PUSH_PROMISE"},
		{"frame too large", func(c *rawH2, id uint32) {
			c.sse(id)
			c.fr.WriteData(id, false, make([]byte, 20000))
		}, metrics.FailStreamBroken, "SETTINGS_MAX_FRAME_SIZE"},
		{"closed mid-stream", func(c *rawH2, id uint32) {
			c.sse(id)
			c.token(id, "a")
			c.conn.Close()
		}, metrics.FailStreamBroken, "connection lost"},
		{"ended without done", func(c *rawH2, id uint32) {
			c.sse(id)
			c.fr.WriteData(id, true, []byte(`data: {"choices":[{"text":"a"}]}`+"\n\n"))
		}, metrics.FailStreamBroken, "without [DONE]"},
		{"ended inside a line", func(c *rawH2, id uint32) {
			c.sse(id)
			c.fr.WriteData(id, true, []byte(`data: {"choi`))
		}, metrics.FailStreamBroken, "without [DONE]"},
		{"ended without headers", func(c *rawH2, id uint32) { c.fr.WriteData(id, true, nil) }, metrics.FailMalformed, "DATA before the response headers"},
		{"error status", func(c *rawH2, id uint32) {
			c.headers(id, false, ":status", "503")
			c.fr.WriteData(id, true, []byte(`{"error":{"message":"overloaded"}}`))
		}, metrics.FailHTTP5xx, "HTTP 503: overloaded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := serveRawH2(t, nil, func(c *rawH2, _ int) {
				id, _ := c.request()
				tc.serve(c, id)
				c.awaitReset(id)
			})
			rec := runOne(t, Options{Target: h2Target(url)}, oneReq("a", 3))
			if rec.Failure != tc.kind || !strings.Contains(rec.Error, tc.msg) {
				t.Fatalf("record: %q %q, want %q naming %q", rec.Failure, rec.Error, tc.kind, tc.msg)
			}
		})
	}
}

// TestH2ClientNoStreamsAllowed: a server whose SETTINGS allow no stream fails the request
// once, naming the setting, instead of having it dial again and again.
func TestH2ClientNoStreamsAllowed(t *testing.T) {
	url := serveRawH2(t, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 0}}, func(c *rawH2, _ int) { c.request() })
	rec, res := runOneResult(t, Options{Target: h2Target(url)}, oneReq("a", 1))
	if rec.Failure != metrics.FailMalformed || !strings.Contains(rec.Error, "SETTINGS_MAX_CONCURRENT_STREAMS 0") || res.Connections != 1 {
		t.Fatalf("record: %q %q after %d connections", rec.Failure, rec.Error, res.Connections)
	}
}

// TestH2ClientNoSettings: a server that never speaks HTTP/2 fails the request at the connect
// timeout, not never.
func TestH2ClientNoSettings(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	tg := h2Target("http://" + ln.Addr().String())
	tg.Timeouts.Connect = 200 * time.Millisecond
	rec := runOne(t, Options{Target: tg}, oneReq("a", 1))
	if rec.Failure != metrics.FailTimeoutConnect {
		t.Fatalf("record: %q %q, want timeout_connect", rec.Failure, rec.Error)
	}
}

// FuzzH2Response: whatever bytes follow the server's SETTINGS, the request ends with one
// record, within its total timeout, without a panic.
func FuzzH2Response(f *testing.F) {
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	var hb bytes.Buffer
	hpack.NewEncoder(&hb).WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true})
	fr.WriteData(1, false, []byte("data: {\"choices\":[{\"text\":\"a\"}]}\n\n"))
	fr.WriteData(1, true, []byte("data: [DONE]\n\n"))
	f.Add(b.Bytes())
	f.Add(b.Bytes()[:20])
	f.Add([]byte{0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, wire []byte) {
		dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
			cli, srv := net.Pipe()
			go func() {
				defer srv.Close()
				go io.Copy(io.Discard, srv)
				sfr := http2.NewFramer(srv, nil)
				if sfr.WriteSettings() != nil {
					return
				}
				srv.Write(wire)
			}()
			return cli, nil
		}
		tg := h2Target("http://engine")
		tg.Timeouts.Total = 2 * time.Second
		var col collector
		res, err := Run(context.Background(), []traces.Request{oneReq("a", 2)}, Options{Target: tg, Dial: dial}, col.sink)
		if err != nil {
			t.Fatal(err)
		}
		if len(col.recs) != 1 || res.Succeeded+res.Failed != 1 {
			t.Fatalf("%d records, %+v", len(col.recs), res)
		}
		if r := col.recs[0]; !r.OK() && r.Error == "" {
			t.Fatalf("failure %q without a message", r.Failure)
		}
	})
}

// TestH2ClientOpensConnectionsAtTheStreamLimit: with the server's
// SETTINGS_MAX_CONCURRENT_STREAMS at 2, five streams open at once go over three connections.
func TestH2ClientOpensConnectionsAtTheStreamLimit(t *testing.T) {
	const n = 5
	b := newBarrierServer(n)
	srv := httptest.NewUnstartedServer(b)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 2}
	srv.Start()
	defer srv.Close()
	res, err := Run(context.Background(), barrierReqs(n), Options{Target: h2Target(srv.URL)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Succeeded != n || res.Connections != 3 {
		t.Fatalf("%d of %d succeeded over %d connections; want all over 3", res.Succeeded, n, res.Connections)
	}
}

// TestH2ClientGivesItsWindowBack: a response three times the client's stream window (from a
// server that honours the window) arrives whole: the client returns the window as it parses
// a stream in place, and as it reads a whole JSON body.
func TestH2ClientGivesItsWindowBack(t *testing.T) {
	event := []byte(`data: {"choices":[{"text":"` + strings.Repeat("x", 50) + `"}]}` + "\n\n")
	events := 3 * h2StreamWindow / len(event)
	text := strings.Repeat("y", 3*h2StreamWindow)
	for _, ctype := range []string{"text/event-stream", "application/json"} {
		t.Run(ctype, func(t *testing.T) {
			var pieces [][]byte
			if ctype == "application/json" {
				whole := []byte(`{"choices":[{"text":"` + text + `"}],"usage":{"prompt_tokens":5,"completion_tokens":` + fmt.Sprint(events+10) + `}}`)
				for len(whole) > 0 {
					n := min(len(whole), 16000)
					pieces, whole = append(pieces, whole[:n]), whole[n:]
				}
			} else {
				for range events {
					pieces = append(pieces, event)
				}
				pieces = append(pieces, []byte("data: [DONE]\n\n"))
			}
			url := serveRawH2(t, nil, func(c *rawH2, _ int) {
				id, _ := c.request()
				var mu sync.Mutex
				cond := sync.NewCond(&mu)
				win := map[uint32]int64{0: c.connWin, id: h2StreamWindow}
				gone := make(chan struct{}) // the client hung up
				defer func() { <-gone }()   // (closing first would reset what it has not read)
				go func() {                 // the window updates, read while the writer waits for them
					defer close(gone)
					for {
						f, err := c.fr.ReadFrame()
						if _, reset := f.(*http2.RSTStreamFrame); err != nil || reset {
							mu.Lock()
							win[0] = -1 << 40
							cond.Broadcast()
							mu.Unlock()
							return
						}
						if w, ok := f.(*http2.WindowUpdateFrame); ok {
							mu.Lock()
							win[w.StreamID] += int64(w.Increment)
							cond.Broadcast()
							mu.Unlock()
						}
					}
				}()
				c.headers(id, false, ":status", "200", "content-type", ctype)
				for i, p := range pieces {
					n := int64(len(p))
					mu.Lock()
					for win[0] >= 0 && (win[0] < n || win[id] < n) {
						cond.Wait()
					}
					if win[0] < 0 {
						mu.Unlock()
						return
					}
					win[0] -= n
					win[id] -= n
					mu.Unlock()
					c.fr.WriteData(id, i == len(pieces)-1, p)
				}
			})
			tg := h2Target(url)
			tg.Timeouts.Total = 30 * time.Second
			tg.Timeouts.Idle = 5 * time.Second
			rec := runOne(t, Options{Target: tg}, oneReq("a", events+10))
			if !rec.OK() || (ctype == "text/event-stream" && len(rec.Chunks) != events) {
				t.Fatalf("record: %q %q, %d chunks (of %d events)", rec.Failure, rec.Error, len(rec.Chunks), events)
			}
		})
	}
}

// TestH2ClientRefusedStreamRetries: a stream the server refuses (RST_STREAM REFUSED_STREAM:
// not processed) is sent again; here on the same connection, which still has room.
func TestH2ClientRefusedStreamRetries(t *testing.T) {
	url := serveRawH2(t, nil, func(c *rawH2, _ int) {
		id, _ := c.request()
		c.fr.WriteRSTStream(id, http2.ErrCodeRefusedStream)
		id2, _ := c.request()
		if id2 <= id {
			t.Errorf("retry on stream %d after %d", id2, id)
			return
		}
		c.answer(id2)
	})
	rec, res := runOneResult(t, Options{Target: h2Target(url)}, oneReq("a", 1))
	if !rec.OK() || res.Connections != 1 {
		t.Fatalf("record %+v, %d connections; want one success on the first connection", rec, res.Connections)
	}
}
