package loadgen

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/internal/pipenet"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// holdHeaders is a server that queues every request: it reads the request and sends nothing
// (as Ollama and llama.cpp do while a request waits for a slot) until hold has passed, then
// answers with one token; it returns early when the client goes away.
func holdHeaders(hold time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-time.After(hold):
		case <-r.Context().Done():
			return
		}
		if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			s := startSSE(w)
			s.data(textChunk(" a", 1))
			s.done()
			return
		}
		io.WriteString(w, `{"choices":[{"text":" a","finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`)
	}
}

// TestRequestWaitsVirtual: each wait before the answer is bounded by its own timeout and named
// by its own kind, on a virtual clock (HTTP/1.1 over an in-memory network): a request held
// without headers is timeout_headers at the headers timeout, or at the first-token timeout
// when none is set, never timeout_connect; a request held longer than the connect timeout and
// then answered succeeds; a dial nobody accepts is timeout_connect; a non-streamed request's
// headers come with its answer, so the first-token timeout bounds them.
func TestRequestWaitsVirtual(t *testing.T) {
	const s = time.Second
	for _, c := range []struct {
		name     string
		hold     time.Duration // how long the server holds the headers; < 0: nobody accepts
		noStream bool
		to       Timeouts
		kind     metrics.FailureKind
		after    time.Duration // from sending to the end
		msg      string
	}{
		{name: "queued past the headers timeout", hold: time.Hour, to: Timeouts{Connect: s, Headers: 3 * s, FirstToken: 10 * s},
			kind: metrics.FailTimeoutHeaders, after: 3 * s, msg: "headers timeout"},
		{name: "queued past the first-token timeout", hold: time.Hour, to: Timeouts{Connect: s, FirstToken: 10 * s},
			kind: metrics.FailTimeoutHeaders, after: 10 * s, msg: "first-token timeout"},
		{name: "queued longer than the connect timeout, then answered", hold: 5 * s, to: Timeouts{Connect: s, FirstToken: 10 * s},
			after: 5 * s},
		{name: "the total timeout still bounds the header wait", hold: time.Hour, to: Timeouts{Connect: s, Total: 4 * s},
			kind: metrics.FailTimeoutTotal, after: 4 * s},
		{name: "never accepted", hold: -1, to: Timeouts{Connect: s, Headers: 3 * s, FirstToken: 10 * s},
			kind: metrics.FailTimeoutConnect, after: s, msg: "connect timeout"},
		{name: "never accepted, first-token bound", hold: -1, to: Timeouts{FirstToken: 2 * s},
			kind: metrics.FailTimeoutConnect, after: 2 * s, msg: "first-token timeout"},
		{name: "not streamed: the answer brings the headers", hold: time.Hour, noStream: true, to: Timeouts{Connect: s, Headers: 3 * s, FirstToken: 10 * s},
			kind: metrics.FailTimeoutFirst, after: 10 * s},
	} {
		synctest.Test(t, func(t *testing.T) {
			pn := pipenet.New()
			defer pn.Close()
			if c.hold >= 0 {
				var stop func()
				pn, stop = serveVirtual(holdHeaders(c.hold))
				defer stop()
			}
			tg := Target{URL: "http://engine", Model: "m", Stream: !c.noStream, Backend: "openai", Timeouts: c.to}
			var col collector
			if _, err := Run(context.Background(), []traces.Request{oneReq("x", 1)}, Options{Target: tg, Dial: pn.Dial, Clock: timerClock{}}, col.sink); err != nil {
				t.Fatal(err)
			}
			r := col.recs[0]
			if r.Failure != c.kind || !strings.Contains(r.Error, c.msg) {
				t.Errorf("%s: %q (%s), want %q with %q", c.name, r.Failure, r.Error, c.kind, c.msg)
			}
			if got := time.Duration(r.End - r.Sent); got != c.after {
				t.Errorf("%s: ended %v after sending, want %v", c.name, got, c.after)
			}
			if (r.Headers != 0) != (c.kind == metrics.FailNone) {
				t.Errorf("%s: headers time %d with outcome %q", c.name, r.Headers, r.Failure)
			}
		})
	}
}

// TestRequestWaitsLoopback: the same kinds on real sockets, over HTTP/1.1 and the HTTP/2
// client: a loopback server that accepts and holds the headers, and (Linux) a listener whose
// accept queue is full, so that the kernel drops the client's SYN.
func TestRequestWaitsLoopback(t *testing.T) {
	const ms = time.Millisecond
	for _, proto := range []string{"http/1.1", "h2c"} {
		queue := newServer(t, holdHeaders(time.Hour)).URL
		if proto == "h2c" {
			queue = serveRawH2(t, nil, func(c *rawH2, _ int) {
				if id, _ := c.request(); id != 0 {
					c.awaitReset(id)
				}
			})
		}
		cases := []struct {
			name, url string
			to        Timeouts
			kind      metrics.FailureKind
		}{
			{"queued, headers timeout", queue, Timeouts{Connect: 10 * time.Second, Headers: 50 * ms}, metrics.FailTimeoutHeaders},
			{"queued, first-token timeout", queue, Timeouts{Connect: 10 * time.Second, FirstToken: 50 * ms}, metrics.FailTimeoutHeaders},
		}
		if full := fullBacklog(t); full != "" {
			cases = append(cases, struct {
				name, url string
				to        Timeouts
				kind      metrics.FailureKind
			}{"accept queue full", full, Timeouts{Connect: 50 * ms, FirstToken: 10 * time.Second}, metrics.FailTimeoutConnect})
		}
		for _, c := range cases {
			tg := target(c.url)
			tg.HTTP2 = proto == "h2c"
			tg.Timeouts = c.to
			tg.Timeouts.Total = 20 * time.Second
			rec := runOne(t, Options{Target: tg}, oneReq("a", 1))
			if rec.Failure != c.kind {
				t.Errorf("%s, %s: %q (%s), want %q", proto, c.name, rec.Failure, rec.Error, c.kind)
			}
		}
	}
}
