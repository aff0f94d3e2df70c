package main

// Issue 9 security acceptance tests through the whole CLI: planted API keys and secret header
// values never reach any results file, stdout or stderr (right key, wrong key, a server that
// echoes them back, a password in the endpoint URL); outside text (model names, error bodies,
// class names) is escaped in report.html.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
)

const (
	plantedKey   = "sk-planted-KEY-4f1c9a7e2b6d"
	wrongKey     = "sk-WRONG-planted-7a3e9c1f55"
	plantedHdr   = "hdr-planted-SECRET-9d8e7f6a"
	plantedPass  = "pw-planted-URL-0b1c2d3e4f"
	keyEnv       = "LLMBENCH_TEST_API_KEY"
	secretHeader = "X-Secret"
)

// findSecrets lists where any secret appears: in a file under dir (hidden and temporary files
// included) or in the app's stdout/stderr.
func findSecrets(t *testing.T, app *testApp, dir string, secrets ...string) []string {
	t.Helper()
	var found []string
	check := func(where string, data []byte) {
		for _, s := range secrets {
			if i := bytes.Index(data, []byte(s)); i >= 0 {
				lo, hi := max(0, i-80), min(len(data), i+len(s)+40)
				found = append(found, fmt.Sprintf("%s contains the secret %q: …%q…", where, s, data[lo:hi]))
			}
		}
	}
	check("stdout", []byte(app.out.String()))
	check("stderr", []byte(app.err.String()))
	if dir == "" {
		return found
	}
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		check(filepath.Base(path), data)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	t.Logf("checked %d files under %s and stdout/stderr for %d secrets", files, dir, len(secrets))
	return found
}

// assertNoSecrets fails when any secret appears in any file under dir or in the app's
// stdout/stderr.
func assertNoSecrets(t *testing.T, app *testApp, dir string, secrets ...string) {
	t.Helper()
	for _, f := range findSecrets(t, app, dir, secrets...) {
		t.Error(f)
	}
}

// TestSecuritySecretsNeverWritten plants an API key (through --api-key-env) and a secret
// header value against a reference engine that requires the key, and checks that neither
// appears anywhere in the results, reports or terminal output.
func TestSecuritySecretsNeverWritten(t *testing.T) {
	// The run command cannot give the embedded engine an API key, so the engine that
	// requires one runs on httptest.
	srv := startRefEngine(t, refengine.Config{TimeScale: 20, APIKey: plantedKey})
	dir := t.TempDir()
	trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "s", n: 12, spacing: 200 * time.Millisecond, in: 32, out: 8})

	runArgs := func(out string, extra ...string) []string {
		return append([]string{"run", "--trace", trace, "--out", out, "--endpoint", srv.URL, "--rate-scale", "20",
			"--no-progress", "--scrape-metrics"}, extra...)
	}

	t.Run("right-key", func(t *testing.T) {
		out := filepath.Join(dir, "right")
		app := newTestApp(map[string]string{keyEnv: plantedKey})
		mustRun(t, app, runArgs(out, "--api-key-env", keyEnv, "--header", secretHeader+":"+plantedHdr)...)
		_, s := checkRunInvariants(t, out, ids)
		if s.Requests.Failed != 0 {
			t.Fatalf("failures with the right key: %v", s.Requests.Failures)
		}
		for _, f := range []string{"summary.json", "requests.msgpack", "report.html", "server-metrics.json"} {
			if _, err := os.Stat(filepath.Join(out, f)); err != nil {
				t.Errorf("results file missing: %v", err)
			}
		}
		if !strings.Contains(s.Run.Command, "--header <redacted>") {
			t.Errorf("run.command does not show the header as redacted: %q", s.Run.Command)
		}
		assertNoSecrets(t, app, out, plantedKey, plantedHdr)
		// The report re-rendered from the files, and the other formats, stay clean too.
		for _, format := range []string{"html", "terminal", "markdown", "csv", "json"} {
			mustRun(t, app, "report", out, "--format", format)
		}
		assertNoSecrets(t, app, out, plantedKey, plantedHdr)
	})

	t.Run("wrong-key", func(t *testing.T) {
		out := filepath.Join(dir, "wrong")
		app := newTestApp(map[string]string{keyEnv: wrongKey})
		runExpect(t, app, exitRunFailed, runArgs(out, "--api-key-env", keyEnv, "--header="+secretHeader+":"+plantedHdr, "--model", "llama-3.1-8b")...)
		recs, s := checkRunInvariants(t, out, ids)
		if s.Requests.Failures[string(metrics.FailHTTP4xx)] != len(ids) {
			t.Fatalf("failures %v, want every request http_4xx (401)", s.Requests.Failures)
		}
		for _, r := range recs {
			if r.Status != http.StatusUnauthorized || r.Error == "" {
				t.Errorf("%s: status %d error %q, want 401 with the server's message", r.ID, r.Status, r.Error)
			}
		}
		assertNoSecrets(t, app, out, wrongKey, plantedKey, plantedHdr)
	})

	t.Run("wrong-key-discovery", func(t *testing.T) {
		out := filepath.Join(dir, "wrong-discovery")
		app := newTestApp(map[string]string{keyEnv: wrongKey})
		if code := app.cli(runArgs(out, "--api-key-env", keyEnv, "--header", secretHeader+":"+plantedHdr)...); code == 0 {
			t.Fatal("model discovery with a wrong key succeeded")
		}
		if !strings.Contains(app.err.String(), "401") {
			t.Errorf("discovery error does not say 401: %q", app.err.String())
		}
		assertNoSecrets(t, app, out, wrongKey, plantedKey, plantedHdr)
	})

	t.Run("key-as-header", func(t *testing.T) {
		out := filepath.Join(dir, "as-header")
		app := newTestApp(nil)
		mustRun(t, app, runArgs(out, "--header", "Authorization: Bearer "+plantedKey, "--header="+secretHeader+": "+plantedHdr)...)
		_, s := checkRunInvariants(t, out, ids)
		if s.Requests.Failed != 0 {
			t.Fatalf("failures with the key as a header: %v", s.Requests.Failures)
		}
		assertNoSecrets(t, app, out, plantedKey, plantedHdr)
	})
}

// echoServer is a hostile OpenAI-compatible server that echoes the request's credentials back
// in its error messages: 401 on odd requests, an error event inside a 200 stream on even ones.
func echoServer(t *testing.T) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leak := fmt.Sprintf("you sent %q and %s=%q", r.Header.Get("Authorization"), secretHeader, r.Header.Get(secretHeader))
		if u, p, ok := r.BasicAuth(); ok {
			leak += fmt.Sprintf(" and basic auth %s:%s", u, p)
		}
		if r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"object":"list","data":[{"id":"echo-model","object":"model","owned_by":%q}]}`, leak)
			return
		}
		if r.URL.Path != "/v1/completions" {
			http.NotFound(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		odd := n.Add(1)%2 == 1
		msg, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "bad credentials: " + leak, "type": "invalid_request_error"}})
		if odd {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write(msg)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"text\":\"hi\"}],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1}}\n\n")
		fmt.Fprintf(w, "event: error\ndata: %s\n\n", msg)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSecurityEchoedSecretsScrubbed: a server that echoes the API key, a secret header and
// the URL's password into its error messages (and model list) does not get them written.
func TestSecurityEchoedSecretsScrubbed(t *testing.T) {
	srv := echoServer(t)
	dir := t.TempDir()
	trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "e", n: 10, spacing: 10 * time.Millisecond, in: 16, out: 4})
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("bench", plantedPass)
	for _, tc := range []struct {
		name     string
		endpoint string
		extra    []string
	}{
		{"key-and-header", srv.URL, []string{"--model", "echo-model"}},
		{"discovery", srv.URL, nil},
		{"url-password", u.String(), []string{"--model", "echo-model"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name)
			app := newTestApp(map[string]string{keyEnv: plantedKey})
			args := append([]string{"run", "--trace", trace, "--out", out, "--endpoint", tc.endpoint, "--no-progress",
				"--api-key-env", keyEnv, "--header", secretHeader + ":" + plantedHdr}, tc.extra...)
			runExpect(t, app, exitRunFailed, args...) // every request fails (issue 20: exit 3)
			recs, s := checkRunInvariants(t, out, ids)
			if s.Requests.Failed != len(ids) {
				t.Errorf("failures %v, want all %d (401s and error events)", s.Requests.Failures, len(ids))
			}
			for _, r := range recs {
				if !strings.Contains(r.Error, "bad credentials") {
					t.Errorf("%s: error %q lost the server's message", r.ID, r.Error)
				}
			}
			assertNoSecrets(t, app, out, plantedKey, plantedHdr)
			if tc.name == "url-password" {
				if leaks := findSecrets(t, app, out, plantedPass); len(leaks) > 0 {
					t.Fatalf("the password in --endpoint's URL was written out: %s",
						strings.Join(leaks, "; "))
				}
			}
		})
	}
}

const (
	xssScript = "<script>alert(1)</script>"
	xssImg    = "<img src=x onerror=alert(1)>"
)

// hostileServer answers with a model name and error messages that carry HTML.
func hostileServer(t *testing.T) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			b, _ := json.Marshal(map[string]any{"object": "list", "data": []any{map[string]any{"id": xssImg, "object": "model"}}})
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
			return
		case "/v1/completions":
		default:
			http.NotFound(w, r)
			return
		}
		var body struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		k := n.Add(1) % 3
		errBody, _ := json.Marshal(map[string]any{"error": map[string]any{"message": xssScript, "type": "server_error"}})
		switch k {
		case 0:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			w.Write(errBody)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		flusher, _ := w.(http.Flusher)
		for i := 1; i <= body.MaxTokens; i++ {
			chunk, _ := json.Marshal(map[string]any{
				"id": "cmpl-" + xssScript, "object": "text_completion", "model": body.Model,
				"choices": []any{map[string]any{"index": 0, "text": xssImg}},
				"usage":   map[string]any{"prompt_tokens": 8, "completion_tokens": i, "total_tokens": 8 + i},
			})
			fmt.Fprintf(w, "data: %s\n\n", chunk)
			if flusher != nil {
				flusher.Flush()
			}
			if k == 2 && i == 2 {
				fmt.Fprintf(w, "data: %s\n\n", errBody)
				return
			}
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSecurityReportEscapesOutsideText: a model name, error messages, response ids and class
// names carrying HTML never appear raw in report.html, which still renders.
func TestSecurityReportEscapesOutsideText(t *testing.T) {
	srv := hostileServer(t)
	dir := t.TempDir()
	var b strings.Builder
	var ids []string
	for i := range 15 {
		id := fmt.Sprintf("h%02d", i)
		ids = append(ids, id)
		class := "chat"
		if i%2 == 0 {
			class = xssScript
		}
		fmt.Fprintf(&b, `{"id":%q,"arrival_s":%g,"input_tokens":8,"output_tokens":4,"class":%q}`+"\n", id, float64(i)*0.01, class)
	}
	trace := filepath.Join(dir, "trace.jsonl")
	if err := os.WriteFile(trace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	app := newTestApp(nil)
	mustRun(t, app, "run", "--trace", trace, "--out", out, "--endpoint", srv.URL, "--no-progress")
	recs, s := checkRunInvariants(t, out, ids)
	if s.Run.Model != xssImg {
		t.Fatalf("run.model = %q, want the hostile name %q", s.Run.Model, xssImg)
	}
	kinds := map[metrics.FailureKind]int{}
	for _, r := range recs {
		kinds[r.Failure]++
	}
	if kinds[metrics.FailNone] == 0 || kinds[metrics.FailHTTP5xx] == 0 || kinds[metrics.FailServerError] == 0 {
		t.Fatalf("want successes, 500s and in-stream errors; got %v", kinds)
	}

	check := func(t *testing.T) {
		t.Helper()
		html, err := os.ReadFile(filepath.Join(out, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range []string{xssScript, xssImg, "<img", "onerror=alert(1)>"} {
			if i := bytes.Index(html, []byte(raw)); i >= 0 {
				t.Errorf("report.html contains raw %q: …%q…", raw, html[max(0, i-100):min(len(html), i+60)])
			}
		}
		if !bytes.Contains(html, []byte("</html>")) || !bytes.Contains(html, []byte("<body")) {
			t.Error("report.html does not render (no body or no closing tag)")
		}
		escaped := 0
		for _, e := range []string{"&lt;img src=x onerror=alert(1)&gt;", `\u003cimg src=x onerror=alert(1)\u003e`, "&lt;script&gt;alert(1)&lt;/script&gt;", `\u003cscript\u003ealert(1)\u003c/script\u003e`} {
			escaped += bytes.Count(html, []byte(e))
		}
		if escaped == 0 {
			t.Error("report.html shows neither the model name nor the class or error text (escaped)")
		}
	}
	t.Run("run", check)
	// Re-rendered from the saved files.
	t.Run("report", func(t *testing.T) {
		mustRun(t, app, "report", out)
		check(t)
	})
	// The comparison report escapes too.
	t.Run("compare-html", func(t *testing.T) {
		cmpHTML := filepath.Join(dir, "cmp.html")
		if code := app.cli("compare", out, out, "--html", cmpHTML); code != 0 && code != 1 {
			t.Fatalf("compare: exit %d: %s", code, app.err.String())
		}
		html, err := os.ReadFile(cmpHTML)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range []string{xssScript, xssImg} {
			if bytes.Contains(html, []byte(raw)) {
				t.Errorf("comparison HTML contains raw %q", raw)
			}
		}
	})
}

// TestSecurityServeAndRun: llmbench serve (the reference engine, loopback by default) with a
// planted --api-key, driven by llmbench run with the same key from the environment: the key
// reaches neither serve's output nor anything run writes.
func TestSecurityServeAndRun(t *testing.T) {
	root := newRootCmd(&App{Stdout: io.Discard, Stderr: io.Discard})
	serve, _, err := root.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	if def := serve.Flags().Lookup("addr").DefValue; !strings.HasPrefix(def, "127.0.0.1:") {
		t.Errorf("serve --addr defaults to %q, want a 127.0.0.1 address", def)
	}

	serveOut := &syncBuffer{}
	pr, pw := io.Pipe()
	serveApp := &App{Stdout: io.MultiWriter(pw, serveOut), Stderr: serveOut, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- execute(ctx, serveApp, []string{"serve", "--addr", "127.0.0.1:0", "--time-scale", "20", "--api-key", plantedKey})
		pw.Close()
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if c := <-code; c != 0 {
				t.Errorf("serve exited %d", c)
			}
		}
	}
	defer stop()
	sc := bufio.NewScanner(pr)
	base := ""
	for base == "" && sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), "listening on "); ok {
			base, _, _ = strings.Cut(rest, " ")
		}
	}
	go io.Copy(io.Discard, pr)
	if base == "" {
		t.Fatal("serve printed no URL")
	}

	dir := t.TempDir()
	trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "v", n: 10, spacing: 100 * time.Millisecond, in: 32, out: 8})
	out := filepath.Join(dir, "out")
	app := newTestApp(map[string]string{keyEnv: plantedKey})
	mustRun(t, app, "run", "--trace", trace, "--out", out, "--endpoint", base, "--rate-scale", "20", "--no-progress",
		"--api-key-env", keyEnv, "--header", secretHeader+":"+plantedHdr, "--scrape-metrics")
	_, s := checkRunInvariants(t, out, ids)
	if s.Requests.Failed != 0 {
		t.Errorf("failures against serve with the right key: %v", s.Requests.Failures)
	}
	stop()
	assertNoSecrets(t, app, out, plantedKey, plantedHdr)
	if strings.Contains(serveOut.String(), plantedKey) {
		t.Errorf("serve's output contains its API key:\n%s", serveOut.String())
	}
}
