package refengine

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHugeMaxTokensRejected: max_tokens near 2^63 must not wrap the context-length sum.
func TestHugeMaxTokensRejected(t *testing.T) {
	e, err := New(Config{TimeScale: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	h := e.Handler()
	for _, mt := range []string{fmt.Sprint(int64(math.MaxInt64)), fmt.Sprint(int64(math.MaxInt64 - 3))} {
		body := `{"model":"` + e.ServedModelName() + `","prompt":"hello there","max_tokens":` + mt + `,"stream":true}`
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/completions", strings.NewReader(body)))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "maximum context length") {
			t.Errorf("max_tokens %s: HTTP %d %.200s, want 400 naming the context length", mt, rec.Code, rec.Body.String())
		}
	}
	// Errors quoting the request stay short.
	for _, body := range []string{
		`{"model":"` + strings.Repeat("m", 1<<20) + `","prompt":"x"}`,
		`{"model":"` + e.ServedModelName() + `","messages":[{"role":"user","content":[{"type":"` + strings.Repeat("t", 1<<20) + `"}]}]}`,
	} {
		path := "/v1/completions"
		if strings.Contains(body, "messages") {
			path = "/v1/chat/completions"
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader(body)))
		if rec.Code/100 != 4 || rec.Body.Len() > 2048 {
			t.Errorf("HTTP %d with an error body of %d bytes", rec.Code, rec.Body.Len())
		}
	}
	if _, err := Simulate([]SimRequest{{ID: "x", PromptTokens: 5, MaxTokens: math.MaxInt}}, Config{}); err == nil {
		t.Error("Simulate accepted MaxTokens = MaxInt")
	}
}

// TestRequestThatCannotFitEnds: a request needing more KV blocks than the cache holds ends at
// once (finish reason abort, its stream told) instead of being preempted and recomputed forever.
func TestRequestThatCannotFitEnds(t *testing.T) {
	r, err := Config{NumBlocks: 4}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	c := r.newCore()
	st := newStream()
	s := &seq{tl: &Timeline{ID: "big"}, promptTokens: 40, target: 1000, sink: st}
	c.submit(s)
	for i := 0; i < 100 && !s.tl.Done; i++ {
		d, ok := c.plan()
		if !ok {
			break
		}
		c.complete(c.now+d, d)
	}
	if !s.tl.Done {
		t.Fatalf("the request neither ran nor ended: %+v", s.tl)
	}
	p := st.take(nil)
	if len(p) == 0 || !p[len(p)-1].final {
		t.Fatalf("the stream was not told the request ended: %+v", p)
	}
}

// TestBodyBounds: a declared body above the limit is answered 413 at once, and a client that
// sends headers but no body is cut off after the body read timeout.
func TestBodyBounds(t *testing.T) {
	e, err := New(Config{TimeScale: 1000, BodyReadTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	send := func(head string) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprint(c, head)
		line, _ := bufio.NewReader(c).ReadString('\n')
		return line
	}
	if got := send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n"); !strings.Contains(got, " 413 ") {
		t.Errorf("declared 1 GB body: %q, want 413 at once", got)
	}
	if got := send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"); !strings.Contains(got, " 408 ") {
		t.Errorf("no body: %q, want 408 after the body read timeout", got)
	}
	_ = bytes.MinRead
}
