package loadgen

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// multiTokenServer streams chunks of 3 words each (one reference token per word), like a
// speculative-decoding engine, with a role prelude, a finish chunk and a final usage chunk;
// perChunk adds cumulative usage to every chunk.
func multiTokenServer(t *testing.T, perChunk bool) *httptest.Server {
	return newServer(t, func(w http.ResponseWriter, r *http.Request) {
		q := decodeReq(t, r)
		s := startSSE(w)
		ws := words(q.MaxTokens)
		s.data(`{"id":"cmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":7,"completion_tokens":0}}`)
		n := 0
		for i := 0; i < len(ws); i += 3 {
			j := min(i+3, len(ws))
			n = j
			c := -1
			if perChunk {
				c = n
			}
			s.data(textChunk(strings.Join(ws[i:j], ""), c))
		}
		s.data(`{"id":"cmpl-1","choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":null}`)
		s.data(usageChunk(7, n))
		s.done()
	})
}

func TestMultiTokenChunks(t *testing.T) {
	tests := []struct {
		name     string
		perChunk bool
		tok      tokenizer.Tokenizer
		attrib   string
		want     []int32
	}{
		{"per-chunk usage", true, nil, metrics.TokensFromUsage, []int32{3, 3, 3, 1}},
		{"per-chunk usage beats tokenizer", true, tokenizer.Reference{}, metrics.TokensFromUsage, []int32{3, 3, 3, 1}},
		// The final usage is the total; the tokenizer splits it (here exactly).
		{"tokenizer", false, tokenizer.Reference{}, metrics.TokensFromTokenizer, []int32{3, 3, 3, 1}},
		// The final usage is the total, spread evenly (largest remainder, earlier first).
		{"no tokenizer", false, nil, metrics.TokensEven, []int32{3, 3, 2, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := multiTokenServer(t, tt.perChunk)
			tg := target(srv.URL)
			tg.Backend = "openai" // no ignore_eos: the chunk-count case would be short
			rec := runOne(t, Options{Target: tg, Tokenizer: tt.tok}, oneReq("a", 10))
			if !rec.OK() {
				t.Fatalf("failed: %s %s", rec.Failure, rec.Error)
			}
			if rec.TokenSource != metrics.TokensFromUsage || rec.TokenAttribution != tt.attrib {
				t.Errorf("token source %q attribution %q, want usage and %q", rec.TokenSource, rec.TokenAttribution, tt.attrib)
			}
			if len(rec.Chunks) != 4 {
				t.Fatalf("%d chunks, want 4 content chunks (prelude and finish excluded)", len(rec.Chunks))
			}
			want := tt.want
			sum := 0
			for i, c := range rec.Chunks {
				if c.Tokens != want[i] {
					t.Errorf("chunk %d carried %d tokens, want %d", i, c.Tokens, want[i])
				}
				sum += int(c.Tokens)
				if i > 0 && c.T < rec.Chunks[i-1].T {
					t.Errorf("chunk times go back")
				}
			}
			if rec.OutputTokens != sum || sum != 10 {
				t.Errorf("output tokens %d, chunks sum to %d", rec.OutputTokens, sum)
			}
			if rec.ServerOutputTokens != 10 || rec.ServerInputTokens != 7 {
				t.Errorf("server usage %d/%d, want 7/10", rec.ServerInputTokens, rec.ServerOutputTokens)
			}
			if rec.FirstToken != rec.Chunks[0].T || rec.FirstToken < rec.Headers || rec.End < rec.Chunks[3].T {
				t.Errorf("times out of order: %+v", rec)
			}
			wantHash := hashString(fnvAdd(fnvOffset, []byte(strings.Join(words(10), ""))))
			if rec.OutputHash != wantHash {
				t.Errorf("output hash %s, want %s", rec.OutputHash, wantHash)
			}
			if rec.ResponseID != "cmpl-1" || rec.Status != 200 || rec.RequestedTokens != 10 {
				t.Errorf("id %q status %d requested %d", rec.ResponseID, rec.Status, rec.RequestedTokens)
			}
		})
	}
}

// TestVLLMExtensions checks what the vllm preset sends and that the chat path carries a
// synthesized user message.
func TestVLLMExtensions(t *testing.T) {
	var got wireReq
	var gotID, gotAuth string
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = decodeReq(t, r)
		gotID, gotAuth = r.Header.Get("X-Request-Id"), r.Header.Get("Authorization")
		s := startSSE(w)
		s.data(chatChunk(" ok"))
		s.data(usageChunk(3, 1))
		s.done()
	})
	tg := target(srv.URL)
	tg.API = "chat"
	tg.APIKey = "k-123"
	req := oneReq("q1", 1)
	req.Prompt = ""
	req.InputTokens = 20
	rec := runOne(t, Options{Target: tg, Tokenizer: tokenizer.Reference{}}, req)
	if !rec.OK() {
		t.Fatalf("failed: %s %s", rec.Failure, rec.Error)
	}
	if r := r2s(got); !got.IgnoreEOS || got.MinTokens != 1 || got.MaxTokens != 1 || !got.Stream || got.StreamOptions == nil ||
		!got.StreamOptions.IncludeUsage || !got.StreamOptions.ContinuousUsageStats {
		t.Errorf("vllm extensions not sent: %s", r)
	}
	if len(got.Messages) != 1 || got.Messages[0].Role != "user" || (tokenizer.Reference{}).Count(got.Messages[0].Content) != 20 {
		t.Errorf("want one synthesized user message of 20 tokens, got %+v", got.Messages)
	}
	if gotID != "q1" || gotAuth != "Bearer k-123" {
		t.Errorf("headers: X-Request-Id %q Authorization %q", gotID, gotAuth)
	}
	// The server's usage.prompt_tokens (3) is the count; the trace's 20 is what was intended.
	if rec.InputTokens != 3 || rec.InputSource != metrics.InputFromUsage || rec.IntendedInputTokens != 20 {
		t.Errorf("input tokens %d from %q (intended %d), want the server's 3 from usage (intended 20)", rec.InputTokens, rec.InputSource, rec.IntendedInputTokens)
	}
}

func r2s(w wireReq) string { return fmt.Sprintf("%+v", w) }

func TestNonStreaming(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if q := decodeReq(t, r); q.Stream || q.StreamOptions != nil {
			t.Errorf("streaming asked for: %+v", q)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","choices":[{"index":0,"text":" a b c","finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":3}}`)
	})
	tg := target(srv.URL)
	tg.Stream = false
	rec := runOne(t, Options{Target: tg}, oneReq("a", 3))
	if !rec.OK() || rec.OutputTokens != 3 || rec.TokenSource != metrics.TokensFromUsage || rec.FirstToken != 0 || len(rec.Chunks) != 0 {
		t.Fatalf("record %+v", rec)
	}
}

// TestNonStreamingLongGeneration: a non-streaming answer's headers come after the whole
// generation, so the connect timeout (time to headers of a stream) must not cut it; the
// first-token timeout bounds it instead.
func TestNonStreamingLongGeneration(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond) // a generation longer than the connect timeout
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","choices":[{"index":0,"text":" a b c","finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":3}}`)
	})
	tg := target(srv.URL)
	tg.Stream = false
	tg.Timeouts = Timeouts{Connect: 20 * time.Millisecond, FirstToken: time.Minute}
	if rec := runOne(t, Options{Target: tg}, oneReq("a", 3)); !rec.OK() || rec.OutputTokens != 3 {
		t.Fatalf("a 300 ms generation under a 20 ms connect timeout: %s %q", rec.Failure, rec.Error)
	}
	tg.Timeouts = Timeouts{Connect: 20 * time.Millisecond, FirstToken: 50 * time.Millisecond}
	if rec := runOne(t, Options{Target: tg}, oneReq("b", 3)); rec.Failure != metrics.FailTimeoutFirst {
		t.Fatalf("first-token timeout of 50 ms on a 300 ms answer: %s %q", rec.Failure, rec.Error)
	}
}

func TestDiscoverModel(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"object":"list","data":[{"id":"llama-3.1-8b","object":"model"}]}`)
	})
	for _, u := range []string{srv.URL, srv.URL + "/", srv.URL + "/v1", srv.URL + "/v1/"} {
		m, err := DiscoverModel(t.Context(), Target{URL: u})
		if err != nil || m != "llama-3.1-8b" {
			t.Errorf("DiscoverModel(%s) = %q, %v", u, m, err)
		}
	}
	empty := newServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"data":[]}`) })
	if _, err := DiscoverModel(t.Context(), Target{URL: empty.URL}); err == nil || !strings.Contains(err.Error(), "--model") {
		t.Errorf("no model listed: err %v, want one that says to give --model", err)
	}
}

// TestSecretsNeverRecorded plants an API key and a secret header that a hostile server echoes
// in every error it can produce.
func TestSecretsNeverRecorded(t *testing.T) {
	const key, hdr = "sk-planted-secret-0123456789", "hdr-planted-secret-987"
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		echo := r.Header.Get("Authorization") + " " + r.Header.Get("X-Api-Key")
		switch r.Header.Get("X-Request-Id") {
		case "status":
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"bad key %s"}}`, echo)
		case "stream":
			s := startSSE(w)
			s.data(fmt.Sprintf(`{"error":{"message":"%s"}}`, echo))
		case "malformed":
			s := startSSE(w)
			s.data("not json " + echo)
		default:
			fmt.Fprint(w, `{"data":[{"id":"`+echo+`"}]}`)
		}
	})
	tg := target(srv.URL)
	tg.APIKey = key
	tg.Headers = map[string]string{"X-Api-Key": hdr}
	var col collector
	reqs := []traces.Request{oneReq("status", 2), oneReq("stream", 2), oneReq("malformed", 2)}
	if _, err := Run(t.Context(), reqs, Options{Target: tg}, col.sink); err != nil {
		t.Fatal(err)
	}
	bad := target("http://user:" + key + "@127.0.0.1:1")
	bad.APIKey = key
	_, err := Run(t.Context(), []traces.Request{oneReq("x", 1)}, Options{Target: bad}, col.sink)
	all := fmt.Sprintf("%+v %v", col.recs, err)
	if len(col.recs) != 4 {
		t.Fatalf("%d records, want 4", len(col.recs))
	}
	if strings.Contains(all, key) || strings.Contains(all, hdr) {
		t.Fatalf("a secret leaked into records or errors: %s", all)
	}
	if !strings.Contains(all, "<redacted>") {
		t.Errorf("want the echoed secrets replaced by <redacted>: %s", all)
	}
}

// closedPortURL returns a loopback URL nothing listens on.
func closedPortURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

func TestFailureKinds(t *testing.T) {
	hijackClose := func(w http.ResponseWriter, prefix string) {
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		buf.WriteString(prefix)
		buf.Flush()
		c.Close()
	}
	// block waits for the client to go away; the body must be read first so that the server
	// notices the connection closing.
	block := func(r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}
	const ms = time.Millisecond
	tests := []struct {
		name    string
		h       func(w http.ResponseWriter, r *http.Request)
		to      Timeouts
		url     string
		backend string
		kind    metrics.FailureKind
		status  int
		msg     string
		chunks  int
	}{
		{name: "connect", url: "closed", kind: metrics.FailConnect},
		{name: "reset before headers", h: func(w http.ResponseWriter, r *http.Request) { hijackClose(w, "") }, kind: metrics.FailConnect},
		{name: "429", h: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(429)
			fmt.Fprint(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
		}, kind: metrics.FailHTTP429, status: 429, msg: "slow down"},
		{name: "400", h: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"object":"error","message":"max_tokens too large","code":400}`)
		}, kind: metrics.FailHTTP4xx, status: 400, msg: "max_tokens too large"},
		{name: "503 plain text", h: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(503)
			fmt.Fprint(w, "overloaded")
		}, kind: metrics.FailHTTP5xx, status: 503, msg: "overloaded"},
		{name: "timeout headers", h: func(w http.ResponseWriter, r *http.Request) { block(r) }, to: Timeouts{Connect: 10 * time.Second, Headers: 30 * ms}, kind: metrics.FailTimeoutHeaders},
		{name: "timeout first token", h: func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			s := startSSE(w)
			s.data(`{"choices":[{"delta":{"role":"assistant"}}]}`)
			block(r)
		}, to: Timeouts{FirstToken: 30 * ms}, kind: metrics.FailTimeoutFirst, status: 200},
		{name: "timeout idle", h: func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			s := startSSE(w)
			s.data(textChunk(" a", -1))
			block(r)
		}, to: Timeouts{Idle: 30 * ms}, kind: metrics.FailTimeoutIdle, status: 200, chunks: 1},
		{name: "timeout total", h: func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			s := startSSE(w)
			s.data(textChunk(" a", -1))
			s.data(textChunk(" b", -1))
			block(r)
		}, to: Timeouts{Total: 30 * ms, Idle: time.Hour}, kind: metrics.FailTimeoutTotal, status: 200, chunks: 2},
		{name: "no DONE", h: func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.data(textChunk(" a", -1))
		}, kind: metrics.FailStreamBroken, status: 200, chunks: 1, msg: "without [DONE]"},
		{name: "reset mid-stream", h: func(w http.ResponseWriter, r *http.Request) {
			hijackClose(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
				fmt.Sprintf("%x\r\ndata: %s\n\n\r\n", len(textChunk(" a", -1))+8, textChunk(" a", -1)))
		}, kind: metrics.FailStreamBroken, status: 200, chunks: 1},
		{name: "invalid JSON", h: func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.data(textChunk(" a", -1))
			s.data(`{"choices":[{"text":`)
			s.done()
		}, kind: metrics.FailMalformed, status: 200, chunks: 1},
		{name: "unknown SSE line is ignored (the SSE spec)", h: func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.raw("this is not SSE\n\n")
			s.done()
		}, kind: metrics.FailEmpty, status: 200},
		{name: "SSE line over the limit", h: func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.raw("data: " + strings.Repeat("x", DefaultMaxLineBytes+1) + "\n\n")
			s.done()
		}, kind: metrics.FailMalformed, status: 200, msg: "byte limit"},
		{name: "empty", h: func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.data(`{"choices":[{"delta":{"role":"assistant","content":""}}]}`)
			s.data(`{"choices":[{"delta":{},"finish_reason":"stop"}]}`)
			s.done()
		}, kind: metrics.FailEmpty, status: 200},
		{name: "short output", h: func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.data(textChunk(" a", 1))
			s.data(textChunk(" b", 2))
			s.data(usageChunk(7, 2))
			s.done()
		}, kind: metrics.FailShortOutput, status: 200, chunks: 2, msg: "2 output tokens, 4 requested"},
		{name: "short is fine without ignore_eos", backend: "openai", h: func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.data(textChunk(" a", -1))
			s.done()
		}, kind: metrics.FailNone, status: 200, chunks: 1},
		{name: "error in stream", h: func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.data(textChunk(" a", -1))
			s.data(`{"error":{"message":"engine died","code":500}}`)
		}, kind: metrics.FailServerError, status: 200, chunks: 1, msg: "engine died"},
		{name: "error event", h: func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.raw("event: error\ndata: {\"detail\":\"x\"}\n\n")
		}, kind: metrics.FailServerError, status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := tt.url
			switch {
			case u == "closed":
				u = closedPortURL(t)
			case tt.h != nil:
				u = newServer(t, tt.h).URL
			}
			tg := target(u)
			tg.Timeouts = tt.to
			tg.Backend = tt.backend
			rec := runOne(t, Options{Target: tg, Tokenizer: tokenizer.Reference{}}, oneReq("a", 4))
			if rec.Failure != tt.kind {
				t.Fatalf("failure %q (%s), want %q", rec.Failure, rec.Error, tt.kind)
			}
			if rec.Status != tt.status {
				t.Errorf("status %d, want %d", rec.Status, tt.status)
			}
			if !strings.Contains(rec.Error, tt.msg) {
				t.Errorf("error %q does not contain %q", rec.Error, tt.msg)
			}
			if len(rec.Chunks) != tt.chunks {
				t.Errorf("%d chunks kept, want %d (partial timings)", len(rec.Chunks), tt.chunks)
			}
			if rec.Sent == 0 && rec.Intended == 0 && rec.End < rec.Sent {
				t.Errorf("times: %+v", rec)
			}
			if rec.End < rec.Sent || (tt.chunks > 0 && rec.FirstToken == 0) {
				t.Errorf("partial timings lost: %+v", rec)
			}
		})
	}
}

// TestBackendPresets checks what each --backend preset puts on the wire.
func TestBackendPresets(t *testing.T) {
	want := map[string][4]bool{ // ignore_eos, min_tokens, include_usage, continuous_usage_stats
		"vllm": {true, true, true, true}, "sglang": {true, true, true, true}, "llamacpp": {true, false, true, false},
		"tgi": {false, false, true, false}, "ollama": {false, false, true, false}, "openai": {false, false, true, false},
	}
	if len(Backends()) != len(want) {
		t.Fatalf("Backends() = %v", Backends())
	}
	for _, b := range Backends() {
		var got wireReq
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			got = decodeReq(t, r)
			s := startSSE(w)
			s.data(textChunk(" a", 1))
			s.done()
		})
		tg := target(srv.URL)
		tg.Backend = b
		runOne(t, Options{Target: tg}, oneReq("x", 1))
		so := got.StreamOptions != nil
		g := [4]bool{got.IgnoreEOS, got.MinTokens == 1, so && got.StreamOptions.IncludeUsage, so && got.StreamOptions.ContinuousUsageStats}
		if g != want[b] {
			t.Errorf("%s sent %v, want %v", b, g, want[b])
		}
		m, err := BackendExtensions(b)
		if err != nil || m["ignore_eos"] != want[b][0] || m["continuous_usage_stats"] != want[b][3] {
			t.Errorf("BackendExtensions(%s) = %v, %v", b, m, err)
		}
	}
	if _, err := BackendExtensions("triton"); err == nil {
		t.Error("unknown backend accepted")
	}
}

// TestEndlessStream: a server that never stops streaming is cut off, not buffered forever.
func TestEndlessStream(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s := startSSE(w)
		block := strings.Repeat("data: "+textChunk(" a", -1)+"\n\n", 256)
		for r.Context().Err() == nil {
			s.raw(block)
		}
	})
	tg := target(srv.URL)
	tg.Backend = "openai"
	rec := runOne(t, Options{Target: tg}, oneReq("e", 2))
	if rec.Failure != metrics.FailMalformed || len(rec.Chunks) != chunkLimit(2)+1 {
		t.Errorf("failure %q after %d chunks: %s", rec.Failure, len(rec.Chunks), rec.Error)
	}
}
