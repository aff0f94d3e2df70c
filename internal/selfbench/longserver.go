package selfbench

import (
	"bufio"
	"container/heap"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// longServer streams tokens to many long-lived streams at a fixed gap, spending as little
// memory and CPU per stream as it can so that the process's figures are mostly the client's.
// It is not net/http: a short-lived goroutine reads each HTTP/1.1 request and writes the
// headers and the first token (over HTTP/2 a goroutine per connection reads the client's
// frames and does the same, longh2.go), and then the stream is only an entry in a timing heap
// (a connection and a few words, no goroutine, no buffer); two emitter goroutines write every
// stream's next token when it is due and end the stream after [DONE].
//
// It books the send time of every token of the sampled streams (IDs whose number is a
// multiple of sample), for the arrival-error figure, and the first-token time of every
// stream (the last of them is when all streams were open).
type longServer struct {
	epoch  time.Time
	url    string
	l      net.Listener
	http2  bool
	done   chan struct{}
	words  [][]byte
	sample int

	shards [2]emitShard
	open   atomic.Int64 // streams between their first token and [DONE]
	last1  atomic.Int64 // the latest first-token send time, ns after epoch

	booked sendTimes // sampled id -> send time of each token

	mu     sync.Mutex       // conns
	conns  map[*h2conn]bool // HTTP/2 connections open; nil once the server closed
	reader sync.WaitGroup   // HTTP/2 connections' reader goroutines
}

// longStream is one stream in flight: on its own HTTP/1.1 connection c, or stream sid of an
// HTTP/2 connection h2.
type longStream struct {
	c      net.Conn
	h2     *h2conn
	sid    uint32
	win    int64 // HTTP/2 send window
	gone   bool  // HTTP/2: ended or reset (guarded by h2.mu)
	id     string
	sent   int
	tokens int
	gap    time.Duration
	start  int64   // ns after the server's epoch, as due
	times  []int64 // sampled streams only
	due    int64
}

// emitShard is one emitter's streams: a heap in due order (HTTP/1.1) or a timing wheel of
// h2Step ticks (HTTP/2).
type emitShard struct {
	mu   sync.Mutex
	h    streamHeap
	w    wheel
	wake chan struct{}
}

func (sh *emitShard) push(st *longStream) { heap.Push(&sh.h, st) }

type streamHeap []*longStream

func (h streamHeap) Len() int           { return len(h) }
func (h streamHeap) Less(i, j int) bool { return h[i].due < h[j].due }
func (h streamHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *streamHeap) Push(x any)        { *h = append(*h, x.(*longStream)) }
func (h *streamHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
}

func startLongServer(http2 bool, sample int) (*longServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench server: %w", err)
	}
	s := &longServer{epoch: time.Now(), url: "http://" + l.Addr().String(), l: l, http2: http2, done: make(chan struct{}), sample: sample,
		conns: map[*h2conn]bool{}}
	s.words = renderWords()
	for i := range s.shards {
		s.shards[i].wake = make(chan struct{}, 1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range s.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if http2 {
				s.emitH2(ctx, &s.shards[i])
			} else {
				s.emit(ctx, &s.shards[i])
			}
		}()
	}
	go func() {
		s.accept()
		s.closeConns()
		s.reader.Wait()
		cancel()
		wg.Wait()
		close(s.done)
	}()
	return s, nil
}

// addConn registers an HTTP/2 connection (and its reader goroutine, which calls
// s.reader.Done when it returns); false once the server is closing.
func (s *longServer) addConn(hc *h2conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		return false
	}
	s.conns[hc] = true
	return true
}

// closeConns closes every HTTP/2 connection and refuses new ones.
func (s *longServer) closeConns() {
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for hc := range conns {
		hc.kill()
	}
}

func (s *longServer) close() {
	s.l.Close()
	<-s.done
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, st := range sh.h {
			st.c.Close()
		}
		sh.h = nil
		sh.w = wheel{}
		sh.mu.Unlock()
	}
}

func (s *longServer) now() int64 { return time.Since(s.epoch).Nanoseconds() }

func (s *longServer) sampled(id string) bool {
	n, err := strconv.Atoi(id[min(1, len(id)):])
	return err == nil && n%s.sample == 0
}

func (s *longServer) noteFirst(t int64) {
	for {
		old := s.last1.Load()
		if t <= old || s.last1.CompareAndSwap(old, t) {
			return
		}
	}
}

func (s *longServer) finish(id string, times []int64) {
	s.open.Add(-1)
	if times != nil {
		s.booked.put(id, times)
	}
}

func (s *longServer) accept() {
	for n := 0; ; n++ {
		c, err := s.l.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return
		}
		if s.http2 {
			s.reader.Add(1)
			sh := &s.shards[n%len(s.shards)]
			go func() {
				defer s.reader.Done()
				s.serveH2(c, sh)
			}()
			continue
		}
		go s.begin(c, &s.shards[n%len(s.shards)])
	}
}

const longHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"

// begin reads a request, sends the headers and the first token, and hands the stream to an
// emitter.
func (s *longServer) begin(c net.Conn, sh *emitShard) {
	req, err := http.ReadRequest(bufio.NewReaderSize(c, 1024))
	if err != nil {
		c.Close()
		return
	}
	// Read the body whole: closing a socket with unread input resets the connection, and the
	// client could lose the end of the stream.
	io.Copy(io.Discard, req.Body)
	tokens, _ := strconv.Atoi(req.Header.Get(tokensHeader))
	gap, _ := time.ParseDuration(req.Header.Get(gapHeader))
	st := &longStream{c: c, id: req.Header.Get("X-Request-Id"), tokens: max(tokens, 1), gap: gap, start: s.now()}
	if s.sampled(st.id) {
		st.times = make([]int64, 0, st.tokens)
	}
	s.open.Add(1)
	if _, err := io.WriteString(c, longHead); err != nil {
		s.finish(st.id, nil)
		c.Close()
		return
	}
	if !s.write(st) {
		return
	}
	st.due = st.start + int64(st.gap)
	sh.mu.Lock()
	sh.push(st)
	sh.mu.Unlock()
	select {
	case sh.wake <- struct{}{}:
	default:
	}
}

// write sends the stream's next token (and the end after the last); it reports whether the
// stream goes on.
func (s *longServer) write(st *longStream) bool {
	t := s.now()
	if st.sent == 0 {
		s.noteFirst(t)
	}
	if st.times != nil {
		st.times = append(st.times, t)
	}
	b := s.words[st.sent%len(s.words)]
	st.sent++
	last := st.sent == st.tokens
	if last {
		// Booked before the end is written: the client may finish, and the bench read the
		// bookings, as soon as [DONE] is out.
		b = append(append([]byte(nil), b...), usage(st.tokens)...)
		s.finish(st.id, st.times)
	}
	if _, err := st.c.Write(b); err != nil || last {
		st.c.Close()
		if !last {
			s.finish(st.id, nil)
		}
		return false
	}
	return true
}

// emit writes the due tokens of one shard's HTTP/1.1 streams, in due order, on an absolute
// schedule, one by one as they fall due.
func (s *longServer) emit(ctx context.Context, sh *emitShard) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		sh.mu.Lock()
		next := int64(-1)
		for len(sh.h) > 0 {
			st := sh.h[0]
			if st.due > s.now() {
				next = st.due
				break
			}
			heap.Pop(&sh.h)
			sh.mu.Unlock()
			goOn := s.write(st)
			sh.mu.Lock()
			if goOn {
				st.due = st.start + int64(st.sent)*int64(st.gap)
				sh.push(st)
			}
		}
		sh.mu.Unlock()
		wait := time.Hour
		if next >= 0 {
			wait = time.Duration(next - s.now())
		}
		if !sh.sleep(ctx, timer, wait) {
			return
		}
	}
}

// sleep waits d, or until a stream is added; false when ctx is done.
func (sh *emitShard) sleep(ctx context.Context, timer *time.Timer, d time.Duration) bool {
	timer.Reset(max(d, 0))
	select {
	case <-ctx.Done():
		return false
	case <-sh.wake:
		if !timer.Stop() {
			<-timer.C
		}
	case <-timer.C:
	}
	return true
}
