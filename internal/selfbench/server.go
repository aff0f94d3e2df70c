package selfbench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/llmbench/llmbench/tokenizer"
)

// Request headers that select what the bench server does.
const (
	modeHeader   = "X-Bench-Mode"   // short, ingest or timed
	tokensHeader = "X-Bench-Tokens" // tokens to stream (ingest, timed)
	gapHeader    = "X-Bench-Gap"    // gap between tokens (timed), a Go duration
)

// server is a minimal OpenAI-style streaming server that spends as little CPU as possible:
// responses are pre-rendered, and the timed mode books when it emitted each token so the
// client's arrival times can be checked against it.
type server struct {
	epoch time.Time
	srv   *http.Server
	url   string
	done  chan struct{}

	short []byte // a whole 4-token stream
	block []byte // blockTokens chunks of one token each
	final []byte // usage chunk and [DONE] (completion_tokens filled per request)
	words [][]byte

	emitted sendTimes // request id -> emission time of each token, ns after epoch
}

// sendTimes holds the send time of each token of each booked request, until the bench takes
// them.
type sendTimes struct {
	mu sync.Mutex
	m  map[string][]int64
}

func (b *sendTimes) put(id string, times []int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string][]int64{}
	}
	b.m[id] = times
}

// take returns what was booked and starts afresh.
func (b *sendTimes) take() map[string][]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.m
	b.m = nil
	if m == nil {
		m = map[string][]int64{}
	}
	return m
}

const blockTokens = 1024

func startServer() (*server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench server: %w", err)
	}
	s := &server{epoch: time.Now(), url: "http://" + l.Addr().String(), done: make(chan struct{})}
	s.words = renderWords()
	for _, w := range s.words {
		s.block = append(s.block, w...)
	}
	for i := range 4 {
		s.short = append(s.short, s.words[i]...)
	}
	s.short = append(s.short, usage(4)...)
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		s.srv.Serve(l)
		close(s.done)
	}()
	return s, nil
}

// renderWords pre-renders blockTokens one-token chat chunks.
func renderWords() [][]byte {
	words := make([][]byte, 0, blockTokens)
	for i := range blockTokens {
		w := tokenizer.Word(uint64(i))
		words = append(words, fmt.Appendf(nil, "data: {\"id\":\"b\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"},\"finish_reason\":null}]}\n\n", w))
	}
	return words
}

func usage(n int) []byte {
	return fmt.Appendf(nil, "data: {\"id\":\"b\",\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", n, n+4)
}

func (s *server) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		s.srv.Close()
	}
	<-s.done
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	n, _ := strconv.Atoi(r.Header.Get(tokensHeader))
	switch r.Header.Get(modeHeader) {
	case "short":
		w.Write(s.short)
	case "ingest":
		for left := n; left > 0; left -= blockTokens {
			b := s.block
			if left < blockTokens {
				b = nil
				for i := range left {
					b = append(b, s.words[i]...)
				}
			}
			if _, err := w.Write(b); err != nil {
				return
			}
		}
		w.Write(usage(n))
	case "timed":
		s.timed(w, r, n)
	default:
		http.Error(w, "bench server: unknown mode", http.StatusBadRequest)
	}
}

// timed streams n tokens gap apart on an absolute schedule, booking each emission time just
// before the write.
func (s *server) timed(w http.ResponseWriter, r *http.Request, n int) {
	gap, _ := time.ParseDuration(r.Header.Get(gapHeader))
	id := r.Header.Get("X-Request-Id")
	times := make([]int64, 0, n)
	f := w.(http.Flusher)
	w.WriteHeader(http.StatusOK)
	f.Flush()
	start := time.Now()
	timer := time.NewTimer(0) // one timer per stream, not one allocation per token
	defer timer.Stop()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * gap)); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-r.Context().Done():
				return
			}
		}
		times = append(times, time.Since(s.epoch).Nanoseconds())
		if _, err := w.Write(s.words[i%blockTokens]); err != nil {
			return
		}
		f.Flush()
	}
	w.Write(usage(n))
	s.emitted.put(id, times)
}
