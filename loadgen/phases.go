package loadgen

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// A request's waits before its answer, each bounded by its own timeout and named by its own
// failure kind (issue 45; docs/reliability.md, "Limits and secrets"):
//
//   - connecting, from sending until the request has a connection (a dial and TLS handshake,
//     HTTP/2's preface and the server's SETTINGS, or a pooled connection): Timeouts.Connect,
//     timeout_connect;
//   - awaiting the response headers, from the connection on, for a streamed request:
//     Timeouts.Headers, else the first-token timeout (which runs from sending), timeout_headers.
//     Real servers (Ollama, llama.cpp) send no headers while a request waits for a slot, so
//     this is queueing in the server, not an unreachable one; a non-streamed answer's headers
//     come with the whole generation, so there the first-token timeout bounds the wait and is
//     timeout_first_token;
//   - awaiting the first generated text, from sending: Timeouts.FirstToken,
//     timeout_first_token.
//
// The first-token timeout, when it fires first, is named by the wait the request was still in:
// timeout_connect before a connection, timeout_headers (streamed) before the headers. The
// transports report the connection through httptrace's GotConn: net/http's does, and the
// HTTP/2 client (h2client.go) calls it when it has reserved a stream on a connection. A
// transport that never reports it leaves the request in "connecting" until its headers.
const (
	phaseConnecting int32 = iota
	phaseHeaders          // connected, awaiting the response headers
	phaseAnswer           // the headers are in
	phaseTimedOut         // a timer ended the connect or the header wait first
)

// Causes of the waits' timeouts (classify maps them to kinds).
var (
	errTimeoutConnect = errors.New("not connected within the connect timeout (dial, TLS handshake, HTTP/2 settings)")
	errConnectByFirst = errors.New("not connected within the first-token timeout")
	errTimeoutHeaders = errors.New("connected, but no response headers within the headers timeout: the server held the request (queued for a slot, or stalled)")
	errHeadersByFirst = errors.New("connected, but no response headers within the first-token timeout: the server held the request (queued for a slot, or stalled)")
)

// timers arms the request's timeouts; each cancels the request with its own cause.
type timers struct {
	connect, first, total *time.Timer
	headers               atomic.Pointer[time.Timer] // armed when the connection is reported
	user                  *time.Timer                // the trace's cancel_after_ms (cancel.go)
	idle                  *idleWatch
	idleD                 time.Duration

	phase    atomic.Int32
	streamed bool
	headersD time.Duration
	cancel   context.CancelCauseFunc
	trace    httptrace.ClientTrace
}

// start arms the request's timeouts of to, from now (its send time). streamed says whether
// the response's headers come before the generation (a stream) or with it.
func (t *timers) start(to Timeouts, streamed bool, cancel context.CancelCauseFunc) {
	t.cancel, t.streamed, t.headersD, t.idleD = cancel, streamed, to.Headers, to.Idle
	t.total = arm(to.Total, cancel, errTimeoutTotal)
	if to.Connect > 0 {
		t.connect = time.AfterFunc(to.Connect, func() {
			if t.phase.CompareAndSwap(phaseConnecting, phaseTimedOut) {
				cancel(errTimeoutConnect)
			}
		})
	}
	if to.FirstToken > 0 {
		t.first = time.AfterFunc(to.FirstToken, t.firstFired)
	}
}

// firstFired is the first-token timeout: named by the wait the request is still in.
func (t *timers) firstFired() {
	for {
		switch p := t.phase.Load(); {
		case p == phaseConnecting:
			if t.phase.CompareAndSwap(p, phaseTimedOut) {
				t.cancel(errConnectByFirst)
				return
			}
		case p == phaseHeaders && t.streamed:
			if t.phase.CompareAndSwap(p, phaseTimedOut) {
				t.cancel(errHeadersByFirst)
				return
			}
		default:
			t.cancel(errTimeoutFirst)
			return
		}
	}
}

// traced is req with the hook by which the transport reports the connection (gotConn).
func (t *timers) traced(req *http.Request) *http.Request {
	t.trace.GotConn = t.gotConn
	return req.WithContext(httptrace.WithClientTrace(req.Context(), &t.trace))
}

// gotConn ends the connect wait and, for a stream with Timeouts.Headers, starts the header
// wait's own timer.
func (t *timers) gotConn(httptrace.GotConnInfo) {
	if !t.phase.CompareAndSwap(phaseConnecting, phaseHeaders) {
		return
	}
	if t.connect != nil {
		t.connect.Stop()
	}
	if t.streamed && t.headersD > 0 {
		t.headers.Store(time.AfterFunc(t.headersD, func() {
			if t.phase.CompareAndSwap(phaseHeaders, phaseTimedOut) {
				t.cancel(errTimeoutHeaders)
			}
		}))
	}
}

// headersIn ends the waits before the answer; false when a connect or headers timeout had
// already fired (the late response is then not recorded: the timeout stands).
func (t *timers) headersIn() bool {
	if t.connect != nil {
		t.connect.Stop()
	}
	if h := t.headers.Load(); h != nil {
		h.Stop()
	}
	return t.phase.CompareAndSwap(phaseHeaders, phaseAnswer) || t.phase.CompareAndSwap(phaseConnecting, phaseAnswer)
}

func (t *timers) stop() {
	for _, tm := range []*time.Timer{t.connect, t.first, t.total, t.user, t.headers.Load()} {
		if tm != nil {
			tm.Stop()
		}
	}
	t.idle.stop()
}
