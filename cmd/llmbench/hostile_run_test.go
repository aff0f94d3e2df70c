package main

// Issue 14 acceptance: a seeded hostile server, one behaviour per request, drives a whole run
// through the CLI; every trace request gets exactly one record with the failure kind its
// behaviour calls for, memory stays bounded, and five secret canaries (header token, API key,
// URL user name and password, query value) appear nowhere: not in any results file, the
// terminal output, or an error.

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
)

// Secret canaries.
const (
	canaryToken = "TOKcanary9Q7Z"    // in --header "Authorization: Bearer …"
	canaryKey   = "sk-KEYcanary4R2W" // --api-key-env
	canaryUser  = "USERcanary5T"     // URL user name
	canaryPass  = "PASScanary8Y"     // URL password
	canaryQuery = "QUERYcanary3P1X"  // URL query value
	canaryEnv   = "LLMBENCH_HOSTILE_KEY"
)

var canaries = []string{canaryToken, canaryKey, canaryUser, canaryPass, canaryQuery}

// behaviour is one way the hostile server answers, with the failure kind it must produce.
type behaviour struct {
	name string
	kind metrics.FailureKind
	// serve answers; echo is every secret the request carried, to be thrown back.
	serve func(w http.ResponseWriter, r *http.Request, echo string, other string)
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func streamHead(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flush(w)
}

func hijacked(w http.ResponseWriter, raw string) {
	c, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	buf.WriteString(raw)
	buf.Flush()
	c.Close()
}

var behaviours = []behaviour{
	{"ok", metrics.FailNone, func(w http.ResponseWriter, r *http.Request, echo, _ string) {
		streamHead(w)
		for range 3 {
			sseChunk(w, "tok ", "")
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}},
	{"bare-cr", metrics.FailNone, func(w http.ResponseWriter, r *http.Request, echo, _ string) {
		streamHead(w)
		io.WriteString(w, "x-vendor: 1\r: note\rdata: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\r\r"+
			"data: {\"choices\":[{\"index\":0,\"text\":\"b\"}]}\r\n\r\ndata: [DONE]\r\r")
	}},
	{"echo-id", metrics.FailNone, func(w http.ResponseWriter, r *http.Request, echo, _ string) {
		streamHead(w)
		id := jsonString("id-" + echo + strings.Repeat("i", 32<<10))
		fmt.Fprintf(w, "data: {\"id\":%s,\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n", id)
		fmt.Fprintf(w, "data: {\"id\":%s,\"choices\":[{\"index\":0,\"text\":\"b\"}]}\n\ndata: [DONE]\n\n", id)
	}},
	{"echo-401", metrics.FailHTTP4xx, func(w http.ResponseWriter, r *http.Request, echo, _ string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":%s}}`, jsonString("Incorrect API key provided: "+echo+" \x1b[2J"))
	}},
	{"echo-stream-error", metrics.FailServerError, func(w http.ResponseWriter, r *http.Request, echo, _ string) {
		streamHead(w)
		sseChunk(w, "a", "")
		fmt.Fprintf(w, "data: {\"error\":{\"message\":%s}}\n\n", jsonString("bad "+echo))
	}},
	{"role-only-forever", metrics.FailTimeoutFirst, func(w http.ResponseWriter, r *http.Request, echo, _ string) {
		streamHead(w)
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n"); err != nil {
				return
			}
			flush(w)
			select {
			case <-r.Context().Done():
			case <-timeAfter(20):
			}
		}
	}},
	{"huge-line", metrics.FailMalformed, func(w http.ResponseWriter, r *http.Request, echo, _ string) {
		streamHead(w)
		io.WriteString(w, "data: ")
		chunk := strings.Repeat("z", 64<<10)
		for range 32 { // 2 MiB, past --max-line-bytes 65536
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
		io.WriteString(w, "\n\n")
	}},
	{"no-content", metrics.FailEmpty, func(w http.ResponseWriter, r *http.Request, echo, _ string) {
		w.WriteHeader(http.StatusNoContent)
	}},
	{"redirect-loop", metrics.FailMalformed, func(w http.ResponseWriter, r *http.Request, echo, _ string) {
		http.Redirect(w, r, r.URL.String(), http.StatusTemporaryRedirect)
	}},
	{"redirect-away", metrics.FailMalformed, func(w http.ResponseWriter, r *http.Request, echo, other string) {
		http.Redirect(w, r, other+r.URL.Path, http.StatusTemporaryRedirect)
	}},
	{"bad-status-line", metrics.FailMalformed, func(w http.ResponseWriter, r *http.Request, echo, _ string) {
		hijacked(w, "HTTP/1.1 2OO OK\r\n\r\n")
	}},
	{"reset-mid-stream", metrics.FailStreamBroken, func(w http.ResponseWriter, r *http.Request, echo, _ string) {
		c := `{"choices":[{"index":0,"text":"a"}]}`
		hijacked(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
			fmt.Sprintf("%x\r\ndata: %s\n\n\r\n", len(c)+8, c))
	}},
	{"silent-after-headers", metrics.FailTimeoutFirst, func(w http.ResponseWriter, r *http.Request, echo, _ string) {
		streamHead(w)
		<-r.Context().Done()
	}},
	{"silent-after-text", metrics.FailTimeoutIdle, func(w http.ResponseWriter, r *http.Request, echo, _ string) {
		streamHead(w)
		sseChunk(w, "a", "")
		for r.Context().Err() == nil { // keep-alives and usage-only chunks are not output
			io.WriteString(w, ": ping\n\ndata: {\"choices\":[],\"usage\":{\"completion_tokens\":1}}\n\n")
			flush(w)
			select {
			case <-r.Context().Done():
			case <-timeAfter(20):
			}
		}
	}},
}

// pick chooses a request's behaviour from its id and the seed.
func pick(seed uint64, id string) behaviour {
	h := fnv.New64a()
	io.WriteString(h, id)
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	return behaviours[rng.IntN(len(behaviours))]
}

// TestHostileServerWholeRun replays 60 requests against the hostile server.
func TestHostileServerWholeRun(t *testing.T) {
	const seed = 14
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, v := range r.Header {
			for _, c := range canaries {
				if strings.Contains(strings.Join(v, ","), c) {
					t.Errorf("a secret went to another host after a redirect: %s", c)
				}
			}
		}
		http.Error(w, "elsewhere", http.StatusTeapot)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echo := r.Header.Get("Authorization") + " " + r.URL.Query().Get("api-key")
		if u, p, ok := r.BasicAuth(); ok {
			echo += " " + u + ":" + p
		}
		switch r.URL.Path {
		case "/metrics":
			http.Error(w, "metrics refused for "+echo, http.StatusForbidden)
			return
		case "/v1/models":
			io.WriteString(w, `{"data":[{"id":"hostile"}]}`)
			return
		}
		io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		pick(seed, r.Header.Get("X-Request-Id")).serve(w, r, echo, other.URL)
	}))
	defer func() {
		srv.CloseClientConnections()
		srv.Close()
	}()

	dir := t.TempDir()
	var b strings.Builder
	var ids []string
	want := map[string]behaviour{}
	for i := range 60 {
		id := fmt.Sprintf("h%02d", i)
		ids = append(ids, id)
		want[id] = pick(seed, id)
		fmt.Fprintf(&b, `{"id":%q,"arrival_s":%g,"input_tokens":8,"output_tokens":4}`+"\n", id, float64(i)*0.005)
	}
	seen := map[string]bool{}
	for _, w := range want {
		seen[w.name] = true
	}
	if len(seen) < len(behaviours)-1 {
		t.Fatalf("the seed exercises only %d of %d behaviours", len(seen), len(behaviours))
	}
	trace := filepath.Join(dir, "trace.jsonl")
	if err := os.WriteFile(trace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	endpoint := strings.Replace(srv.URL, "http://", "http://"+canaryUser+":"+canaryPass+"@", 1) + "/v1?api-key=" + canaryQuery
	out := filepath.Join(dir, "out")
	app := newTestApp(map[string]string{canaryEnv: canaryKey})
	mustRun(t, app, "run", "--trace", trace, "--out", out, "--endpoint", endpoint, "--no-progress", "--backend", "openai",
		"--api-key-env", canaryEnv, "--header", "X-Auth: Bearer "+canaryToken, "--scrape-metrics",
		"--timeout-idle", "400ms", "--timeout-first-token", "1s", "--timeout-total", "20s", "--max-line-bytes", "65536")

	recs, _ := checkRunInvariants(t, out, ids)
	for _, id := range ids {
		r, w := recs[id], want[id]
		if r.Failure != w.kind {
			t.Errorf("%s (%s): failure %q (%.120s), want %q", id, w.name, r.Failure, r.Error, w.kind)
		}
		if len(r.Error) > metrics.MaxErrorLen+len("…") || len(r.ResponseID) > 128 {
			t.Errorf("%s: error of %d bytes, response id of %d bytes kept", id, len(r.Error), len(r.ResponseID))
		}
		if strings.ContainsAny(r.Error, "\x1b\x00") {
			t.Errorf("%s: raw control character in %q", id, r.Error)
		}
	}
	// Memory bound: 60 records, several fed 32 KiB ids and 2 MiB lines.
	if st, err := os.Stat(filepath.Join(out, "requests.msgpack")); err != nil || st.Size() > 64<<10 {
		t.Errorf("requests.msgpack: %v, %d bytes for 60 records", err, st.Size())
	}
	for _, format := range []string{"html", "terminal", "markdown", "csv", "json"} {
		mustRun(t, app, "report", out, "--format", format)
	}
	assertNoSecrets(t, app, out, canaries...)
	// The scraper's error names the server's answer, redacted.
	data, err := os.ReadFile(filepath.Join(out, "server-metrics.json"))
	if err != nil || !strings.Contains(string(data), "403") {
		t.Errorf("server-metrics.json: %v %.300s", err, data)
	}
	if sc := bufio.NewScanner(strings.NewReader(app.err.String())); sc.Scan() {
		t.Logf("stderr: %s", sc.Text())
	}
}

func timeAfter(ms int) <-chan time.Time { return time.After(time.Duration(ms) * time.Millisecond) }
