package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/pipenet"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// collector is a sink that keeps deep copies of the records (the originals are reused).
type collector struct {
	mu   sync.Mutex
	recs []metrics.Record
}

func (c *collector) sink(r *metrics.Record) {
	cp := *r
	cp.Chunks = append([]metrics.Chunk(nil), r.Chunks...)
	c.mu.Lock()
	c.recs = append(c.recs, cp)
	c.mu.Unlock()
}

func (c *collector) byID(t *testing.T) map[string]metrics.Record {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]metrics.Record{}
	for _, r := range c.recs {
		key := r.ID
		if r.Repeat > 0 {
			key = fmt.Sprintf("%s.r%d", r.ID, r.Repeat)
		}
		if _, dup := m[key]; dup {
			t.Fatalf("two records for request %s", key)
		}
		m[key] = r
	}
	return m
}

// wireReq is what the test servers decode from a request body.
type wireReq struct {
	Model         string           `json:"model"`
	Prompt        string           `json:"prompt"`
	Messages      []traces.Message `json:"messages"`
	MaxTokens     int              `json:"max_tokens"`
	MinTokens     int              `json:"min_tokens"`
	IgnoreEOS     bool             `json:"ignore_eos"`
	Stream        bool             `json:"stream"`
	StreamOptions *struct {
		IncludeUsage         bool `json:"include_usage"`
		ContinuousUsageStats bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
}

func decodeReq(t testing.TB, r *http.Request) wireReq {
	var w wireReq
	if err := json.NewDecoder(r.Body).Decode(&w); err != nil && t != nil {
		t.Errorf("server: bad request body: %v", err)
	}
	return w
}

// sse writes SSE events and flushes after each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	f.Flush()
	return &sse{w: w, f: f}
}

func (s *sse) data(payload string) {
	io.WriteString(s.w, "data: "+payload+"\n\n")
	s.f.Flush()
}

func (s *sse) raw(text string) {
	io.WriteString(s.w, text)
	s.f.Flush()
}

func (s *sse) done() { s.data("[DONE]") }

// textChunk is a completions chunk carrying text, with optional cumulative usage.
func textChunk(text string, completion int) string {
	b, _ := json.Marshal(text)
	usage := "null"
	if completion >= 0 {
		usage = fmt.Sprintf(`{"prompt_tokens":7,"completion_tokens":%d,"total_tokens":%d}`, completion, completion+7)
	}
	return fmt.Sprintf(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":%s,"logprobs":null,"finish_reason":null}],"usage":%s}`, b, usage)
}

func chatChunk(content string) string {
	b, _ := json.Marshal(content)
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":%s},"finish_reason":null}]}`, b)
}

func usageChunk(prompt, completion int) string {
	return fmt.Sprintf(`{"id":"cmpl-1","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, prompt, completion, prompt+completion)
}

func newServer(t testing.TB, h http.HandlerFunc) *httptest.Server {
	s := httptest.NewServer(h)
	if t != nil {
		t.Cleanup(s.Close)
	}
	return s
}

func target(url string) Target {
	return Target{URL: url, Model: "m", Stream: true}
}

func oneReq(id string, out int) traces.Request {
	return traces.Request{ID: id, InputTokens: 5, OutputTokens: out, Prompt: " hello there"}
}

func runOne(t *testing.T, opts Options, req traces.Request) metrics.Record {
	t.Helper()
	rec, _ := runOneResult(t, opts, req)
	return rec
}

// runOneResult is runOne with the run's Result (connections dialed, say).
func runOneResult(t *testing.T, opts Options, req traces.Request) (metrics.Record, *Result) {
	t.Helper()
	var col collector
	res, err := Run(context.Background(), []traces.Request{req}, opts, col.sink)
	if err != nil {
		t.Fatal(err)
	}
	if len(col.recs) != 1 || res.Succeeded+res.Failed != 1 {
		t.Fatalf("got %d records, result %+v", len(col.recs), res)
	}
	return col.recs[0], res
}

// serveVirtual serves h on an in-memory network; stop must be called before the bubble ends.
func serveVirtual(h http.Handler) (pn *pipenet.Net, stop func()) {
	pn = pipenet.New()
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		srv.Serve(pn)
		close(done)
	}()
	return pn, func() {
		srv.Close()
		<-done
	}
}

// timerClock paces with plain timers: inside a synctest bubble its times are exact.
type timerClock struct{}

func (timerClock) Now() time.Time { return time.Now() }
func (timerClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func words(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = " w" + strings.Repeat("a", i%5+1)
	}
	return out
}
