package loadgen

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// TestCancelAfter replays one request against a stub that sends a token every 20 ms (after
// headersMs), on a virtual clock, with the trace's cancel_after_ms: the client closes the
// stream exactly cancel_after_ms after sending, the server sees the client go away, and the
// record is cancelled with the tokens received by then; a stream that ends first is a plain
// success.
func TestCancelAfter(t *testing.T) {
	for _, c := range []struct {
		name                string
		headersMs, cancelMs int
		wantTokens          int  // received before the cancel
		wantCancel          bool // else success
	}{
		{name: "mid-stream", cancelMs: 50, wantTokens: 3, wantCancel: true},      // tokens at 0, 20, 40 ms
		{name: "before headers", headersMs: 100, cancelMs: 30, wantCancel: true}, // nothing received
		{name: "after the end", cancelMs: 1000, wantTokens: 10},                  // 10 tokens end at 180 ms
		{name: "no field", cancelMs: 0, wantTokens: 10},                          // never cancelled
	} {
		synctest.Test(t, func(t *testing.T) {
			gone := make(chan struct{}, 1)
			pn, stop := serveVirtual(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if !pause(r, time.Duration(c.headersMs)*time.Millisecond, gone) {
					return
				}
				s := startSSE(w)
				for i := range 10 {
					if i > 0 && !pause(r, 20*time.Millisecond, gone) {
						return
					}
					s.data(textChunk(" a", i+1))
				}
				s.done()
			}))
			defer stop()
			q := oneReq("x", 10)
			q.CancelAfter = time.Duration(c.cancelMs) * time.Millisecond
			tg := Target{URL: "http://engine", Model: "m", Stream: true, Backend: "openai"}
			var col collector
			res, err := Run(context.Background(), []traces.Request{q}, Options{Target: tg, Dial: pn.Dial, Clock: timerClock{}}, col.sink)
			if err != nil {
				t.Fatal(err)
			}
			r := col.recs[0]
			if !c.wantCancel {
				if !r.OK() || r.OutputTokens != c.wantTokens || res.Succeeded != 1 {
					t.Fatalf("%s: %s (%s) with %d tokens, want a success with %d", c.name, r.Failure, r.Error, r.OutputTokens, c.wantTokens)
				}
				return
			}
			if !r.Cancelled() || r.OutputTokens != c.wantTokens || len(r.Chunks) != c.wantTokens {
				t.Fatalf("%s: %q (%s) with %d tokens in %d chunks, want cancelled with %d", c.name, r.Failure, r.Error, r.OutputTokens, len(r.Chunks), c.wantTokens)
			}
			if got := time.Duration(r.End - r.Sent); got != q.CancelAfter {
				t.Errorf("%s: ended %v after sending, want exactly cancel_after_ms %v", c.name, got, q.CancelAfter)
			}
			if res.Cancelled != 1 || res.Failed != 0 {
				t.Errorf("%s: result %+v, want 1 cancelled and no failure", c.name, res)
			}
			if r.Error == "" {
				t.Errorf("%s: no message", c.name)
			}
			synctest.Wait()
			select {
			case <-gone:
			default:
				t.Errorf("%s: the server never saw the client go away", c.name)
			}
		})
	}
}

// pause waits d on the request's context; false (with a note on gone) when the client went
// away first.
func pause(r *http.Request, d time.Duration, gone chan<- struct{}) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		gone <- struct{}{}
		return false
	}
}

// TestCancelInFlightClassifies: a request whose context (or a parent's) was cancelled with
// CancelInFlight is recorded as cancelled with the reason given, not as canceled (an
// interrupt) or a timeout; a plain cancel stays what it was.
func TestCancelInFlightClassifies(t *testing.T) {
	c := &client{}
	parent, cancelParent := context.WithCancelCause(context.Background())
	child, cancelChild := context.WithCancelCause(parent)
	defer cancelChild(nil)
	CancelInFlight(cancelParent, "saturation stop: offered load exceeds completions")
	kind, msg := c.classify(child, errors.New("read: use of closed connection"), metrics.FailStreamBroken)
	if kind != metrics.KindCancelled || msg != "saturation stop: offered load exceeds completions" {
		t.Errorf("classify = %q %q, want cancelled with the reason", kind, msg)
	}
	other, cancelOther := context.WithCancelCause(context.Background())
	cancelOther(errTimeoutTotal)
	if kind, _ := c.classify(other, errors.New("x"), metrics.FailStreamBroken); kind != metrics.FailTimeoutTotal {
		t.Errorf("a timeout classified as %q", kind)
	}
	empty, cancelEmpty := context.WithCancelCause(context.Background())
	CancelInFlight(cancelEmpty, "")
	if kind, msg := c.classify(empty, errors.New("x"), metrics.FailStreamBroken); kind != metrics.KindCancelled || msg != ErrCancelled.Error() {
		t.Errorf("no reason: %q %q", kind, msg)
	}
}
