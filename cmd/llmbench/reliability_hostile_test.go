package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
)

// hostileVariant is one way a broken or hostile server answers a streaming completion.
type hostileVariant struct {
	name string
	// kinds are the failure kinds the request may end with (FailNone: success).
	kinds []metrics.FailureKind
	serve func(w http.ResponseWriter, r *http.Request, maxTokens int)
}

func sseChunk(w io.Writer, text string, usage string) {
	c := `{"id":"cmpl-h","object":"text_completion","choices":[{"index":0,"text":` + jsonString(text) + `}]`
	if usage != "" {
		c += `,"usage":` + usage
	}
	fmt.Fprintf(w, "data: %s}\n\n", c)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

var hostileVariants = []hostileVariant{
	{"decreasing-usage", nil, func(w http.ResponseWriter, _ *http.Request, n int) {
		for i := 1; i <= n; i++ {
			sseChunk(w, "tok ", fmt.Sprintf(`{"prompt_tokens":8,"completion_tokens":%d}`, n+1-i))
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}},
	{"negative-usage", nil, func(w http.ResponseWriter, _ *http.Request, n int) {
		for i := 1; i <= n; i++ {
			sseChunk(w, "tok ", `{"prompt_tokens":-3,"completion_tokens":-7}`)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}},
	// 10 MB in one event: malformed once past the 8 MiB limit, or an idle timeout when the
	// transfer of that one event outlasts --timeout-idle (slow machine, -race).
	{"event-over-limit", []metrics.FailureKind{metrics.FailMalformed, metrics.FailTimeoutIdle}, func(w http.ResponseWriter, _ *http.Request, n int) {
		sseChunk(w, "tok ", "")
		io.WriteString(w, "data: ")
		line := strings.Repeat("a", 1<<20)
		for range 10 {
			if _, err := io.WriteString(w, line); err != nil {
				return
			}
		}
		io.WriteString(w, "\n\n")
	}},
	{"no-text", []metrics.FailureKind{metrics.FailEmpty}, func(w http.ResponseWriter, _ *http.Request, n int) {
		for range 3 {
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\"}]}\n\n")
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}},
	{"done-at-once", []metrics.FailureKind{metrics.FailEmpty}, func(w http.ResponseWriter, _ *http.Request, n int) {
		io.WriteString(w, "data: [DONE]\n\n")
	}},
	{"wrong-types", []metrics.FailureKind{metrics.FailMalformed, metrics.FailEmpty}, func(w http.ResponseWriter, _ *http.Request, n int) {
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":\"0\",\"text\":123}],\"usage\":{\"completion_tokens\":\"many\"}}\n\n")
		fmt.Fprint(w, "data: {\"choices\":{\"text\":\"x\"}}\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}},
	{"cut-mid-line", []metrics.FailureKind{metrics.FailStreamBroken, metrics.FailMalformed}, func(w http.ResponseWriter, _ *http.Request, n int) {
		sseChunk(w, "tok ", "")
		io.WriteString(w, `data: {"choices":[{"index":0,"te`)
	}},
	{"hang-after-headers", []metrics.FailureKind{metrics.FailTimeoutIdle}, func(w http.ResponseWriter, r *http.Request, n int) {
		sseChunk(w, "tok ", "")
		for {
			// Keep-alive comments do not count as activity.
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
				io.WriteString(w, ": ping\n\n")
				if f, ok := w.(http.Flusher); ok {
					f.Flush()
				}
			}
		}
	}},
	{"teapot-html", []metrics.FailureKind{metrics.FailHTTP4xx}, func(w http.ResponseWriter, _ *http.Request, n int) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "<html><body>"+strings.Repeat("no ", 50000)+"</body></html>")
	}},
	{"json-instead-of-sse", []metrics.FailureKind{metrics.FailMalformed, metrics.FailEmpty}, func(w http.ResponseWriter, _ *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"this is":"not a completion"`)
	}},
	{"redirect-loop", []metrics.FailureKind{metrics.FailConnect, metrics.FailHTTP4xx, metrics.FailMalformed}, func(w http.ResponseWriter, r *http.Request, n int) {
		http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
	}},
}

var hugeUsage = hostileVariant{"huge-usage", nil, func(w http.ResponseWriter, _ *http.Request, n int) {
	for i := 1; i <= n; i++ {
		sseChunk(w, "tok ", fmt.Sprintf(`{"prompt_tokens":8,"completion_tokens":%d}`, int64(i)*(1<<40)))
	}
	io.WriteString(w, "data: [DONE]\n\n")
}}

// TestReliabilityHostileServer: a server that answers with nonsense (absurd or negative
// usage, oversized events, wrong JSON types, cut lines, hangs, HTML errors, redirect loops)
// never crashes llmbench: the run completes, every request has one record with a sensible
// failure kind, and the summary adds up.
func TestReliabilityHostileServer(t *testing.T) {
	runHostile(t, hostileVariants)
}

// TestReliabilityHostileHugeUsage: a server whose usage claims 2^40 more tokens per chunk.
func TestReliabilityHostileHugeUsage(t *testing.T) {
	runHostile(t, []hostileVariant{hugeUsage})
}

// runHostile replays two requests per variant against one hostile server.
func runHostile(t *testing.T, variants []hostileVariant) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			io.WriteString(w, `{"data":[{"id":"hostile"}]}`)
			return
		}
		var body struct {
			MaxTokens int `json:"max_tokens"`
		}
		json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body)
		id := r.Header.Get("X-Request-Id")
		for _, v := range variants {
			if strings.HasPrefix(id, v.name+"-") {
				if w.Header().Get("Content-Type") == "" {
					w.Header().Set("Content-Type", "text/event-stream")
				}
				v.serve(w, r, body.MaxTokens)
				return
			}
		}
		http.Error(w, "unknown request id "+id, http.StatusBadRequest)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})

	dir := t.TempDir()
	var b strings.Builder
	var ids []string
	want := map[string][]metrics.FailureKind{}
	for i, v := range variants {
		for k := range 2 {
			id := fmt.Sprintf("%s-%d", v.name, k)
			ids = append(ids, id)
			want[id] = v.kinds
			fmt.Fprintf(&b, `{"id":%q,"arrival_s":%g,"input_tokens":8,"output_tokens":6}`+"\n", id, float64(i*2+k)*0.01)
		}
	}
	trace := filepath.Join(dir, "trace.jsonl")
	if err := os.WriteFile(trace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	app := newTestApp(nil)
	mustRun(t, app, "run", "--trace", trace, "--out", out, "--endpoint", srv.URL, "--no-progress", "--timeout-idle", "500ms")
	recs, s := checkRunInvariants(t, out, ids)
	var bad []string
	for _, id := range ids {
		r := recs[id]
		t.Logf("%s: failure %q status %d tokens %d (%s) chunks %d server_out %d error %.80q", id, r.Failure, r.Status, r.OutputTokens, r.TokenSource, len(r.Chunks), r.ServerOutputTokens, r.Error)
		ok := false
		for _, k := range want[id] {
			ok = ok || r.Failure == k
		}
		if want[id] == nil {
			ok = true // any outcome, as long as the numbers below stay sane
		}
		if !ok {
			t.Errorf("%s: failure %q (%s), want one of %v", id, r.Failure, r.Error, want[id])
		}
		sum := 0
		for _, c := range r.Chunks {
			sum += int(c.Tokens)
			if c.Tokens < 0 {
				bad = append(bad, fmt.Sprintf("%s: a chunk carries %d tokens", id, c.Tokens))
				break
			}
		}
		if r.OutputTokens < 0 || sum != r.OutputTokens {
			bad = append(bad, fmt.Sprintf("%s: output tokens %d, chunks sum to %d", id, r.OutputTokens, sum))
		}
	}
	if s.Requests.OutputTokens < 0 {
		bad = append(bad, fmt.Sprintf("summary output_tokens %d", s.Requests.OutputTokens))
	}
	for name, d := range map[string]metrics.Dist{"itl": s.Latency.ITL, "tpot": s.Latency.TPOT} {
		if d.Min < 0 || d.Count < 0 {
			bad = append(bad, fmt.Sprintf("latency_ms.%s min %g count %d", name, d.Min, d.Count))
		}
	}
	for _, b := range bad {
		t.Error(b)
	}
}
