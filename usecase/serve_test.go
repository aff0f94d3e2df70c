package usecase

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServeKeyFromEnvironment serves the engine on a 127.0.0.1 port from ServeOptions alone:
// the key comes from $LLMBENCH_API_KEY when APIKey is empty, a request without it is refused,
// one with it is answered, and canceling the context stops the server.
func TestServeKeyFromEnvironment(t *testing.T) {
	pr, pw := io.Pipe()
	env, _, _ := testEnv()
	env.Stdout = pw
	env.Getenv = func(k string) string {
		if k == "LLMBENCH_API_KEY" {
			return "s3cret"
		}
		return ""
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, env, &ServeOptions{Addr: "127.0.0.1:0", TimeScale: 50, MaxBodyMiB: 8, Engine: defaultEngine()})
		pw.Close()
	}()
	url := ""
	sc := bufio.NewScanner(pr)
	for url == "" && sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			url, _, _ = strings.Cut(rest, " ")
		}
	}
	go io.Copy(io.Discard, pr)
	if url == "" {
		cancel()
		t.Fatalf("no listening line; Serve: %v", <-done)
	}
	for _, tc := range []struct {
		key  string
		want int
	}{{"", http.StatusUnauthorized}, {"s3cret", http.StatusOK}} {
		req, _ := http.NewRequest("GET", url+"/v1/models", nil)
		if tc.key != "" {
			req.Header.Set("Authorization", "Bearer "+tc.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("key %q: status %d, want %d", tc.key, resp.StatusCode, tc.want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
}

// TestServeRefusesBadOptions checks the values refused before anything listens.
func TestServeRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		o    ServeOptions
		want string
	}{
		{ServeOptions{TimeScale: 0, MaxBodyMiB: 8}, "--time-scale 0"},
		{ServeOptions{TimeScale: 1, MaxBodyMiB: 0}, "--max-body-mib 0"},
		{ServeOptions{TimeScale: 1, MaxBodyMiB: 8, MaxConns: -1}, "--max-connections -1"},
	} {
		tc.o.Addr, tc.o.Engine = "127.0.0.1:0", defaultEngine()
		env, _, _ := testEnv()
		if err := Serve(context.Background(), env, &tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.o, err, tc.want)
		}
	}
}
