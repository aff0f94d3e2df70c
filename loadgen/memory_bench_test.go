package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// holdServer is a streaming server that costs almost nothing per connection, so that a
// memory figure taken with it is the client's: each connection's request is read by a
// short-lived goroutine, which writes the headers and the first chunks and then leaves the
// connection parked in a list (no goroutine, no buffer). release writes the rest of every
// stream and closes the connections.
type holdServer struct {
	l     net.Listener
	head  []byte // headers and the chunks sent before the hold
	tail  []byte // the chunks after it and [DONE]
	mu    sync.Mutex
	held  []net.Conn
	ready chan struct{} // closed when want connections are held
	want  int
	done  chan struct{}
}

func newHoldServer(tb testing.TB, want, before, after int) *holdServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &holdServer{l: l, want: want, ready: make(chan struct{}), done: make(chan struct{})}
	s.head = []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
	body := sseBody(before+after, false)
	cut := 0
	for range before {
		cut += indexEvent(body[cut:])
	}
	s.head = append(s.head, body[:cut]...)
	s.tail = body[cut:]
	go s.serve()
	tb.Cleanup(func() { l.Close(); <-s.done; s.release() })
	return s
}

// indexEvent is the length of the first event of b, its blank line included.
func indexEvent(b []byte) int {
	for i := 1; i < len(b); i++ {
		if b[i] == '\n' && b[i-1] == '\n' {
			return i + 1
		}
	}
	return len(b)
}

func (s *holdServer) serve() {
	defer close(s.done)
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		go func() {
			if _, err := http.ReadRequest(bufio.NewReaderSize(c, 4096)); err != nil {
				c.Close()
				return
			}
			if _, err := c.Write(s.head); err != nil {
				c.Close()
				return
			}
			s.mu.Lock()
			s.held = append(s.held, c)
			if len(s.held) == s.want {
				close(s.ready)
			}
			s.mu.Unlock()
		}()
	}
}

func (s *holdServer) url() string { return "http://" + s.l.Addr().String() }

func (s *holdServer) release() {
	s.mu.Lock()
	held := s.held
	s.held = nil
	s.mu.Unlock()
	for _, c := range held {
		c.Write(s.tail)
		c.Close()
	}
}

// inUse is the memory the Go runtime holds for live objects and goroutine stacks after
// collections.
func inUse() (heap, stacks uint64, goroutines int) {
	// Each collection halves the stacks that use less than a quarter of theirs; a few let
	// them settle where a long stream's would.
	for range 4 {
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.StackInuse, runtime.NumGoroutine()
}

// BenchmarkStreamMemory measures what one in-flight stream costs the client: N streams of
// 1,000 requested tokens are opened, each receives 50 chunks, and with all of them waiting
// for their next chunk the heap in use and the goroutine stacks (after a collection) are
// compared with the figures before the run. The server parks its connections without a
// goroutine or a buffer, so the figure is the client's (kernel socket buffers are not in
// it). One op is one whole run of N streams.
//
// With a tokenizer the stream also keeps its output text for the tokenizer's count of the
// whole output (count.go, wholeText): the second variant measures that.
func BenchmarkStreamMemory(b *testing.B) {
	for _, v := range []struct {
		name string
		tok  tokenizer.Tokenizer
	}{{"", nil}, {",tokenizer=reference", tokenizer.Reference{}}} {
		n := 2000
		b.Run(fmt.Sprintf("streams=%d%s", n, v.name), func(b *testing.B) {
			reqs := make([]traces.Request, n)
			for i := range reqs {
				reqs[i] = traces.Request{ID: fmt.Sprint(i), Arrival: time.Duration(i) * 50 * time.Microsecond, InputTokens: 4, OutputTokens: 1000, Prompt: " a b c d"}
			}
			var perStream, heapPer, stackPer, gPer float64
			for b.Loop() {
				srv := newHoldServer(b, n, 50, 10)
				h0, s0, g0 := inUse()
				var h1, s1 uint64
				var g1 int
				var read atomic.Int64
				measured := make(chan struct{})
				go func() {
					defer close(measured)
					<-srv.ready
					// Every response's first chunks are written; wait until the client
					// has read them all (each stream then waits in a read). Polling is
					// fine here: this is a benchmark, and the figure does not depend on
					// when it is taken once every byte is in.
					for read.Load() < int64(n*len(srv.head)) {
						time.Sleep(time.Millisecond)
					}
					time.Sleep(20 * time.Millisecond) // the readers parse what they read
					h1, s1, g1 = inUse()
					srv.release()
				}()
				d := &net.Dialer{}
				dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
					c, err := d.DialContext(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					return &countingConn{Conn: c, n: &read}, nil
				}
				// A tokenizer counts the 60 tokens sent, which fails each request (sent with
				// ignore_eos for 1,000) as short once it ends: that is the only failure allowed.
				var other atomic.Int64
				sink := func(r *metrics.Record) {
					if !r.OK() && !(v.tok != nil && r.Failure == metrics.FailShortOutput) {
						other.Add(1)
					}
				}
				res, err := Run(context.Background(), reqs, Options{Target: Target{URL: srv.url(), Model: "m", Stream: true}, Dial: dial, Tokenizer: v.tok}, sink)
				<-measured
				if err != nil || res.Sent != n || other.Load() > 0 {
					b.Fatalf("%v %+v", err, res)
				}
				heapPer = (float64(h1) - float64(h0)) / float64(n)
				stackPer = (float64(s1) - float64(s0)) / float64(n)
				perStream = heapPer + stackPer
				gPer = float64(g1-g0) / float64(n)
			}
			b.ReportMetric(perStream, "B/stream")
			b.ReportMetric(heapPer, "heap-B/stream")
			b.ReportMetric(stackPer, "stack-B/stream")
			b.ReportMetric(gPer, "goroutines/stream")
		})
	}
}

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	k, err := c.Conn.Read(b)
	c.n.Add(int64(k))
	return k, err
}
