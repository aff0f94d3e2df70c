package refengine

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// TestPrefixCacheFlushEndpoints: a prompt sent twice is cached the second time; after either
// flush endpoint the same prompt finds nothing cached, and the engine's answer has each
// backend's form.
func TestPrefixCacheFlushEndpoints(t *testing.T) {
	e, url := startEngine(t, Config{})
	prompt := strings.Repeat("shared system prompt words for the cache ", 40)
	n := 0
	send := func() int {
		t.Helper()
		n++
		id := "flush-" + string(rune('a'+n))
		resp, body := post(t, url+"/v1/completions", `{"model":"llama-3.1-8b","prompt":"`+prompt+`","max_tokens":2}`, "X-Request-Id", id)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		tl, ok := e.Timeline(id)
		if !ok {
			t.Fatalf("no timeline for %s", id)
		}
		return tl.CachedTokens
	}
	for _, c := range []struct{ path, body string }{{"/reset_prefix_cache", ""}, {"/flush_cache", "Cache flushed.\n"}} {
		send()
		if got := send(); got == 0 {
			t.Fatalf("%s: the repeated prompt found nothing cached", c.path)
		}
		resp, body := post(t, url+c.path, "")
		if resp.StatusCode != 200 || string(body) != c.body {
			t.Fatalf("POST %s: %d %q, want 200 %q", c.path, resp.StatusCode, body, c.body)
		}
		if got := send(); got != 0 {
			t.Fatalf("after POST %s the prompt found %d tokens cached, want 0", c.path, got)
		}
	}
}

// TestPrefixCacheFlushRefusedWhileRunning: with a request streaming, both endpoints answer 400
// and the cache keeps its blocks.
func TestPrefixCacheFlushRefusedWhileRunning(t *testing.T) {
	e, url := startEngine(t, Config{TimeScale: 1})
	req, err := http.NewRequest("POST", url+"/v1/completions", strings.NewReader(`{"model":"llama-3.1-8b","prompt":"a long running request","max_tokens":4000,"stream":true,"ignore_eos":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The first token has been sent: the request is running (it has thousands more to go).
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/reset_prefix_cache", "/flush_cache"} {
		r, body := post(t, url+path, "")
		if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "requests are running") {
			t.Fatalf("POST %s while running: %d %s", path, r.StatusCode, body)
		}
	}
	if _, err := e.ResetPrefixCache(); err == nil {
		t.Fatal("ResetPrefixCache succeeded while a request was running")
	}
}

// TestDropCachedKeepsHeldBlocks: only free cached blocks lose their prefix; the free queue
// stays whole.
func TestDropCachedKeepsHeldBlocks(t *testing.T) {
	p := newBlockPool(4)
	a, _ := p.alloc()
	b, _ := p.alloc()
	p.register(a, 11)
	p.register(b, 22)
	p.release(a) // free and cached
	if got := p.dropCached(); got != 1 {
		t.Fatalf("dropped %d, want 1", got)
	}
	if p.holds(11) || !p.holds(22) {
		t.Fatalf("holds 11=%v 22=%v, want false true", p.holds(11), p.holds(22))
	}
	if p.free != 3 || p.used() != 1 {
		t.Fatalf("free %d used %d, want 3 and 1", p.free, p.used())
	}
	for i := 0; i < 3; i++ {
		if _, ok := p.alloc(); !ok {
			t.Fatalf("alloc %d failed: the free queue lost a block", i)
		}
	}
	if p.evictions != 0 {
		t.Fatalf("%d evictions, want 0 (the dropped block's prefix was already forgotten)", p.evictions)
	}
}
