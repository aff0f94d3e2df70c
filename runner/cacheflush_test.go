package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCacheFlushPerBackend: each backend's prefix cache is flushed through its own endpoint
// (every llama.cpp slot erased), found by trying them in turn; a server that serves none, or
// refuses, gets an error that says what to enable.
func TestCacheFlushPerBackend(t *testing.T) {
	for _, tc := range []struct {
		stub    *backendStub
		method  string // "" when no flush is possible
		flushes int32  // counted by the stub for NewCacheFlush and one Flush
		errHas  string
	}{
		{&backendStub{backend: "sglang"}, "SGLang POST /flush_cache", 2, ""},
		{&backendStub{backend: "vllm", devMode: true}, "vLLM POST /reset_prefix_cache", 2, ""},
		{&backendStub{backend: "llamacpp", slotSave: true}, "llama.cpp POST /slots/{id}?action=erase", 4, ""},
		{&backendStub{backend: "vllm"}, "", 0, "VLLM_SERVER_DEV_MODE=1"},
		{&backendStub{backend: "llamacpp"}, "", 0, "--slot-save-path"},
		{&backendStub{backend: "sglang", busy: true}, "", 0, "running or waiting requests"},
		{&backendStub{backend: "tgi"}, "", 0, "offers no prefix-cache flush"},
	} {
		name := tc.stub.backend
		srv := tc.stub.start(t)
		f, err := NewCacheFlush(context.Background(), srv.URL+"/v1", "")
		if tc.method == "" {
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("%s: error %v, want one saying %q", name, err, tc.errHas)
			}
			t.Logf("%s: %v", name, err)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.Method != tc.method {
			t.Errorf("%s: method %q, want %q", name, f.Method, tc.method)
		}
		if err := f.Flush(context.Background()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if got := tc.stub.flushes.Load(); got != tc.flushes {
			t.Errorf("%s: %d flushes reached the server, want %d", name, got, tc.flushes)
		}
	}
}

// TestCacheFlushRefusedWithSuccessFalse: a 200 whose body says it did not reset (as a vLLM
// that could not free the blocks of running requests reports) is a refusal, not a flush.
func TestCacheFlushRefusedWithSuccessFalse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/reset_prefix_cache" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"success": false}`))
	}))
	defer srv.Close()
	_, err := NewCacheFlush(context.Background(), srv.URL, "")
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("error %v, want a refusal", err)
	}
	if _, err := NewCacheFlush(context.Background(), "::not a url", ""); err == nil {
		t.Fatal("a malformed URL was accepted")
	}
}
