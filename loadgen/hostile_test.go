package loadgen

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// TestIdleTimeoutCountsGeneratedOutput: events without generated text (role-only chunks,
// empty deltas) do not keep a request alive: before the first token the first-token timeout
// ends it, after it the idle timeout.
func TestIdleTimeoutCountsGeneratedOutput(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s := startSSE(w)
		first := r.Header.Get("X-Request-Id") == "after-text"
		if first {
			s.data(textChunk(" a", -1))
		}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				s.data(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
			}
		}
	})
	for id, want := range map[string]metrics.FailureKind{"before-text": metrics.FailTimeoutFirst, "after-text": metrics.FailTimeoutIdle} {
		tg := target(srv.URL)
		tg.Timeouts = Timeouts{Idle: 60 * time.Millisecond, FirstToken: 120 * time.Millisecond, Total: time.Minute}
		rec := runOne(t, Options{Target: tg}, oneReq(id, 4))
		if rec.Failure != want {
			t.Errorf("%s: failure %q (%s), want %q: role-only chunks are not output", id, rec.Failure, rec.Error, want)
		}
	}
}

// TestTokenPartsAndIDsRedacted: a server echoing the bearer token alone (as OpenAI's
// "Incorrect API key provided: …" does), in the error text and in a response id, leaves no
// trace of it; a huge response id is cut.
func TestTokenPartsAndIDsRedacted(t *testing.T) {
	const tok, q = "SECRET123tok", "QSECRETabc"
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		bearer := strings.TrimPrefix(r.Header.Get("X-Auth"), "Bearer ")
		switch r.Header.Get("X-Request-Id") {
		case "err":
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s (%s) \u001b[31m"}}`, bearer, r.URL.Query().Get("api-key"))
		case "id":
			s := startSSE(w)
			s.data(`{"id":"id-` + bearer + `","choices":[{"index":0,"text":"x"}]}`)
			s.done()
		case "huge-id":
			s := startSSE(w)
			s.data(`{"id":"` + strings.Repeat("i", 1<<20) + `","choices":[{"index":0,"text":"x"}]}`)
			s.done()
		}
	})
	tg := target(srv.URL + "/v1?api-key=" + q)
	tg.Headers = map[string]string{"X-Auth": "Bearer " + tok}
	var col collector
	reqs := []traces.Request{oneReq("err", 1), oneReq("id", 1), oneReq("huge-id", 1)}
	if _, err := Run(t.Context(), reqs, Options{Target: tg}, col.sink); err != nil {
		t.Fatal(err)
	}
	recs := col.byID(t)
	all := fmt.Sprintf("%+v", col.recs)
	if strings.Contains(all, tok) || strings.Contains(all, q) {
		t.Fatalf("a token part leaked: %s", all)
	}
	if strings.Contains(all, "\x1b") {
		t.Errorf("a control character from the server reached a record: %q", recs["err"].Error)
	}
	if got := recs["id"].ResponseID; got != "id-<redacted>" {
		t.Errorf("response id %q, want id-<redacted>", got)
	}
	if n := len(recs["huge-id"].ResponseID); n > 300 {
		t.Errorf("a response id of %d bytes was kept", n)
	}
}

// TestLineLimitIsConfigurable: a line past Target.MaxLineBytes fails as malformed, naming the
// limit.
func TestLineLimitIsConfigurable(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(textChunk(" a", -1))
		s.data(textChunk(strings.Repeat("b", 5000), -1))
		s.done()
	})
	tg := target(srv.URL)
	tg.MaxLineBytes = 4096
	rec := runOne(t, Options{Target: tg}, oneReq("a", 4))
	if rec.Failure != metrics.FailMalformed || !strings.Contains(rec.Error, "4096-byte limit") {
		t.Fatalf("failure %q (%s), want malformed naming the 4096-byte limit", rec.Failure, rec.Error)
	}
}

// TestMisleadingFailureKinds: each answer gets the kind that says what happened.
func TestMisleadingFailureKinds(t *testing.T) {
	hijack := func(w http.ResponseWriter, raw string) {
		c, buf, _ := w.(http.Hijacker).Hijack()
		buf.WriteString(raw)
		buf.Flush()
		c.Close()
	}
	other := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Secret") != "" {
			t.Errorf("a custom header was sent to another host after a redirect")
		}
		s := startSSE(w)
		s.data(textChunk(" a", -1))
		s.done()
	})
	tests := []struct {
		name string
		h    http.HandlerFunc
		kind metrics.FailureKind
		msg  string
	}{
		{"malformed status line", func(w http.ResponseWriter, r *http.Request) {
			hijack(w, "HTTP/1.1 abc nonsense\r\n\r\n")
		}, metrics.FailMalformed, "malformed"},
		{"redirect loop", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
		}, metrics.FailMalformed, "redirect"},
		{"redirect to another host", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
		}, metrics.FailMalformed, "another host"},
		{"huge headers", func(w http.ResponseWriter, r *http.Request) {
			hijack(w, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("h", 200<<10)+"\r\n\r\n")
		}, metrics.FailMalformed, "exceeded"},
		{"204", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		}, metrics.FailEmpty, "204"},
		{"bare CR line ends", func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.raw("data: " + textChunk(" a", -1) + "\r\rdata: [DONE]\r\r")
		}, metrics.FailNone, ""},
		{"unknown field", func(w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.raw("x-vendor: 1\ndata: " + textChunk(" a", -1) + "\n\ndata: [DONE]\n\n")
		}, metrics.FailNone, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := target(newServer(t, tt.h).URL)
			tg.Backend = "openai"
			tg.Headers = map[string]string{"X-Secret": "hdr-value-1"}
			rec := runOne(t, Options{Target: tg}, oneReq("a", 4))
			if rec.Failure != tt.kind || !strings.Contains(rec.Error, tt.msg) {
				t.Fatalf("failure %q (%s), want %q mentioning %q", rec.Failure, rec.Error, tt.kind, tt.msg)
			}
		})
	}
}

// TestStreamedTextIsBounded: a server streaming text without end (long chunks, under the
// chunk-count bound) is stopped once the text passes textLimit.
func TestStreamedTextIsBounded(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s := startSSE(w)
		big := textChunk(strings.Repeat("x", 200<<10), -1)
		for i := 0; i < 100 && r.Context().Err() == nil; i++ {
			s.data(big)
		}
		s.done()
	})
	rec := runOne(t, Options{Target: target(srv.URL)}, oneReq("a", 4))
	if rec.Failure != metrics.FailMalformed || !strings.Contains(rec.Error, "bytes of text") {
		t.Fatalf("failure %q (%s), want malformed: more text than max_tokens can explain", rec.Failure, rec.Error)
	}
}
