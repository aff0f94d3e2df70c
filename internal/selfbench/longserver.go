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
// memory per stream as it can so that the process's memory per stream is mostly the
// client's. Over HTTP/1.1 it is not net/http: a short-lived goroutine reads each request and
// writes the headers and the first token, and then the stream is only an entry in a timing
// heap (a connection and a few words, no goroutine, no buffer); two emitter goroutines
// write every stream's next token when it is due and close the connection after [DONE].
// Over HTTP/2 (h2c) it is net/http's server, whose handlers hold a goroutine per stream.
//
// It books the send time of every token of the sampled streams (IDs whose number is a
// multiple of sample), for the arrival-error figure, and the first-token time of every
// stream (the last of them is when all streams were open).
type longServer struct {
	epoch  time.Time
	url    string
	l      net.Listener
	srv    *http.Server // HTTP/2 only
	done   chan struct{}
	words  [][]byte
	sample int

	shards [2]emitShard
	open   atomic.Int64 // streams between their first token and [DONE]
	last1  atomic.Int64 // the latest first-token send time, ns after epoch

	mu     sync.Mutex
	booked map[string][]int64 // sampled id -> send time of each token
}

// longStream is one stream in flight on the HTTP/1.1 path.
type longStream struct {
	c      net.Conn
	id     string
	sent   int
	tokens int
	gap    time.Duration
	start  time.Time
	times  []int64 // sampled streams only
	due    time.Time
}

type emitShard struct {
	mu   sync.Mutex
	h    streamHeap
	wake chan struct{}
}

type streamHeap []*longStream

func (h streamHeap) Len() int           { return len(h) }
func (h streamHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
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
	s := &longServer{epoch: time.Now(), url: "http://" + l.Addr().String(), l: l, done: make(chan struct{}), sample: sample,
		booked: map[string][]int64{}}
	s.words = renderWords()
	for i := range s.shards {
		s.shards[i].wake = make(chan struct{}, 1)
	}
	if http2 {
		p := new(http.Protocols)
		p.SetHTTP1(true)
		p.SetUnencryptedHTTP2(true)
		// 1,000 streams per connection (net/http's default is 250), so that tens of thousands
		// of streams need tens of connections.
		s.srv = &http.Server{Handler: http.HandlerFunc(s.serveH2), ReadHeaderTimeout: 10 * time.Second, Protocols: p,
			HTTP2: &http.HTTP2Config{MaxConcurrentStreams: 1000}}
		go func() {
			s.srv.Serve(l)
			close(s.done)
		}()
		return s, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range s.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.emit(ctx, &s.shards[i])
		}()
	}
	go func() {
		s.accept()
		cancel()
		wg.Wait()
		close(s.done)
	}()
	return s, nil
}

func (s *longServer) close() {
	if s.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if s.srv.Shutdown(ctx) != nil {
			s.srv.Close()
		}
	} else {
		s.l.Close()
	}
	<-s.done
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, st := range sh.h {
			st.c.Close()
		}
		sh.h = nil
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
		s.mu.Lock()
		s.booked[id] = times
		s.mu.Unlock()
	}
}

func (s *longServer) takeBooked() map[string][]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.booked
	s.booked = map[string][]int64{}
	return m
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
	st := &longStream{c: c, id: req.Header.Get("X-Request-Id"), tokens: max(tokens, 1), gap: gap, start: time.Now()}
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
	st.due = st.start.Add(st.gap)
	sh.mu.Lock()
	heap.Push(&sh.h, st)
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

// emit writes the due tokens of one shard's streams, in due order, on an absolute schedule.
func (s *longServer) emit(ctx context.Context, sh *emitShard) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		sh.mu.Lock()
		var next time.Time
		for len(sh.h) > 0 {
			st := sh.h[0]
			if now := time.Now(); st.due.After(now) {
				next = st.due
				break
			}
			heap.Pop(&sh.h)
			sh.mu.Unlock()
			goOn := s.write(st)
			sh.mu.Lock()
			if goOn {
				st.due = st.start.Add(time.Duration(st.sent) * st.gap)
				heap.Push(&sh.h, st)
			}
		}
		sh.mu.Unlock()
		wait := time.Hour
		if !next.IsZero() {
			wait = time.Until(next)
		}
		timer.Reset(max(wait, 0))
		select {
		case <-ctx.Done():
			return
		case <-sh.wake:
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		}
	}
}

// serveH2 is the HTTP/2 path: one handler per stream, as net/http's server runs them.
func (s *longServer) serveH2(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	tokens, _ := strconv.Atoi(r.Header.Get(tokensHeader))
	tokens = max(tokens, 1)
	gap, _ := time.ParseDuration(r.Header.Get(gapHeader))
	id := r.Header.Get("X-Request-Id")
	var times []int64
	if s.sampled(id) {
		times = make([]int64, 0, tokens)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	s.open.Add(1)
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for i := range tokens {
		if d := time.Until(start.Add(time.Duration(i) * gap)); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-r.Context().Done():
				s.finish(id, nil)
				return
			}
		}
		t := s.now()
		if i == 0 {
			s.noteFirst(t)
		}
		if times != nil {
			times = append(times, t)
		}
		if _, err := w.Write(s.words[i%len(s.words)]); err != nil {
			s.finish(id, nil)
			return
		}
		f.Flush()
	}
	s.finish(id, times) // before the end is written (see write)
	w.Write(usage(tokens))
}
