package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFetchTrace(t *testing.T) {
	body := []byte(`{"id":"r1","arrival_ms":0,"input_tokens":10,"output_tokens":5}` + "\n")
	sum := sha256.Sum256(body)
	good := hex.EncodeToString(sum[:])
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/trace.jsonl":
			w.Write(body)
		case "/endless":
			chunk := make([]byte, 4096)
			for range 64 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	dst := filepath.Join(dir, "trace.jsonl")

	n, err := FetchTrace(ctx, srv.URL+"/trace.jsonl", "SHA256:"+strings.ToUpper(good), dst, FetchOptions{})
	if err != nil || n != int64(len(body)) {
		t.Fatalf("FetchTrace = %d, %v", n, err)
	}
	if got, _ := os.ReadFile(dst); string(got) != string(body) {
		t.Fatalf("wrote %q", got)
	}

	cases := []struct {
		name, url, sum, want string
		max                  int64
	}{
		{"wrong digest", srv.URL + "/trace.jsonl", strings.Repeat("0", 64), "not the 0000", 0},
		{"not found", srv.URL + "/missing", good, "404", 0},
		{"too large", srv.URL + "/endless", good, "more than the 10000 bytes allowed", 10000},
		{"scheme", "file:///etc/passwd", good, "want an http:// or https:// URL", 0},
		{"bad digest", srv.URL + "/trace.jsonl", "abc", "64 hexadecimal digits", 0},
		{"credentials redacted", "http://user:hunter2@" + strings.TrimPrefix(srv.URL, "http://") + "/missing", good, "404", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, "x-"+strings.ReplaceAll(c.name, " ", "-"))
			_, err := FetchTrace(ctx, c.url, c.sum, out, FetchOptions{MaxBytes: c.max})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error shows the password: %v", err)
			}
			if _, serr := os.Stat(out); !os.IsNotExist(serr) {
				t.Fatalf("%s exists after a failed fetch", out)
			}
		})
	}
	// Nothing but the good trace is left in the directory: no temporary files.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("directory holds %v, want only trace.jsonl", names)
	}
}
