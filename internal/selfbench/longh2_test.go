package selfbench

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2client is a raw HTTP/2 client for the long-streams server: frames, no net/http.
type h2client struct {
	t    *testing.T
	c    net.Conn
	fr   *http2.Framer
	hbuf bytes.Buffer
	henc *hpack.Encoder
}

func dialH2(t *testing.T, s *longServer, window uint32) *h2client {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second)) // a broken server fails the test, never hangs it
	h := &h2client{t: t, c: c, fr: http2.NewFramer(c, c)}
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	h.henc = hpack.NewEncoder(&h.hbuf)
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window}); err != nil {
		t.Fatal(err)
	}
	return h
}

// request opens stream sid asking for tokens tokens gap apart.
func (h *h2client) request(sid uint32, id string, tokens int, gap time.Duration) {
	h.hbuf.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "bench"}, {":path", "/v1/chat/completions"},
		{"x-request-id", id}, {h2TokensField, strconv.Itoa(tokens)}, {h2GapField, gap.String()}} {
		h.henc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: sid, BlockFragment: h.hbuf.Bytes(), EndHeaders: true}); err != nil {
		h.t.Fatal(err)
	}
	if err := h.fr.WriteData(sid, true, []byte(`{"model":"bench"}`)); err != nil {
		h.t.Fatal(err)
	}
}

// until reads frames until one satisfies stop, and returns the DATA payloads of stream sid
// seen before it (stop's frame included when it is one).
func (h *h2client) until(sid uint32, stop func(http2.Frame) bool) (data []string, ended bool) {
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			h.t.Fatalf("reading frames: %v (data so far %q)", err, data)
		}
		if d, ok := f.(*http2.DataFrame); ok && d.StreamID == sid {
			data = append(data, string(d.Data()))
			ended = ended || d.StreamEnded()
		}
		if stop(f) {
			return data, ended
		}
	}
}

func pingAck(f http2.Frame) bool {
	p, ok := f.(*http2.PingFrame)
	return ok && p.IsAck()
}

// The server honours the client's stream window: a token that does not fit waits for a
// WINDOW_UPDATE, then the stream goes on to [DONE]. Every token is due at once (no gap), so a
// server ignoring the window would have sent them all.
func TestLongH2WaitsForTheStreamWindow(t *testing.T) {
	s, err := startLongServer(true, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	frame := len(s.words[0])
	h := dialH2(t, s, uint32(frame+frame/2)) // room for one token, not two
	h.request(1, "s0", 3, 0)
	if err := h.fr.WritePing(false, [8]byte{1}); err != nil {
		t.Fatal(err)
	}
	data, _ := h.until(1, pingAck)
	if len(data) != 1 {
		t.Fatalf("before the window was extended: %d DATA frames %q, want the first token only", len(data), data)
	}
	if err := h.fr.WriteWindowUpdate(1, 1<<20); err != nil {
		t.Fatal(err)
	}
	rest, ended := h.until(1, func(f http2.Frame) bool { d, ok := f.(*http2.DataFrame); return ok && d.StreamEnded() })
	if !ended || len(rest) != 2 || !strings.Contains(rest[1], `"completion_tokens":3`) || !strings.HasSuffix(rest[1], "data: [DONE]\n\n") {
		t.Fatalf("after the window update: %q", rest)
	}
	if got := s.booked.take()["s0"]; len(got) != 3 {
		t.Errorf("booked %d send times for s0, want 3", len(got))
	}
}

// RST_STREAM ends a stream on the server (it is no longer open and nothing is booked for it),
// and the connection goes on serving others.
func TestLongH2EndsAResetStream(t *testing.T) {
	s, err := startLongServer(true, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	h := dialH2(t, s, 1<<20)
	h.request(1, "s0", 9, time.Hour)
	if data, _ := h.until(1, func(f http2.Frame) bool { _, ok := f.(*http2.DataFrame); return ok }); len(data) != 1 {
		t.Fatalf("first token: %q", data)
	}
	if err := h.fr.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	// The reader handles frames in order: once the PING is answered the reset was handled.
	if err := h.fr.WritePing(false, [8]byte{2}); err != nil {
		t.Fatal(err)
	}
	h.until(1, pingAck)
	if n := s.open.Load(); n != 0 {
		t.Errorf("%d streams open after the reset, want 0", n)
	}
	h.request(3, "s1", 2, 0)
	if data, ended := h.until(3, func(f http2.Frame) bool { d, ok := f.(*http2.DataFrame); return ok && d.StreamEnded() }); !ended || len(data) != 2 {
		t.Fatalf("stream after the reset: %q", data)
	}
	if b := s.booked.take(); len(b["s0"]) != 0 || len(b["s1"]) != 2 {
		t.Errorf("booked %v, want s1's two tokens only", b)
	}
}
