package refengine

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestSmoke(t *testing.T) {
	e, err := New(Config{TimeScale: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	for _, tc := range []struct{ path, body string }{
		{"/v1/completions", `{"model":"llama-3.1-8b","prompt":"hello world","max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`},
		{"/v1/chat/completions", `{"model":"llama-3.1-8b","messages":[{"role":"user","content":"hi there"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi there"}],"max_tokens":3}`},
	} {
		resp, err := http.Post(srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("%d %s\n%s", resp.StatusCode, resp.Header, b)
	}
}
