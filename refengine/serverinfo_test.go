package refengine

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/internal/pipenet"
)

// getJSON fetches url and decodes its body; it returns the status and the decoded value.
func getJSON(t *testing.T, url string) (int, any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v any
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v: %s", url, err, b)
		}
	}
	return resp.StatusCode, v
}

// TestServerInfoEndpoints: each personality serves its own server's configuration endpoints,
// with the engine's limits in that server's fields, and none of the others'.
func TestServerInfoEndpoints(t *testing.T) {
	paths := []string{"/props", "/slots", "/get_server_info", "/get_model_info", "/info"}
	own := map[string][]string{"llamacpp": {"/props", "/slots"}, "sglang": {"/get_server_info", "/get_model_info"},
		"tgi": {"/info"}, "vllm": nil, "ollama": nil}
	for wire, mine := range own {
		t.Run(wire, func(t *testing.T) {
			_, url := startEngine(t, Config{Wire: wire, MaxNumSeqs: 4, MaxNumBatchedTokens: 512, MaxModelLen: 4096, SpecK: 3, Seed: 1})
			served := map[string]any{}
			for _, p := range paths {
				code, v := getJSON(t, url+p)
				switch {
				case code == http.StatusOK:
					served[p] = v
				case code != http.StatusNotFound && code != http.StatusMethodNotAllowed:
					t.Errorf("%s: status %d", p, code)
				}
			}
			if len(served) != len(mine) {
				t.Errorf("serves %d of the endpoints, want %v", len(served), mine)
			}
			for _, p := range mine {
				if served[p] == nil {
					t.Errorf("%s not served", p)
				}
			}
			checkServerInfo(t, wire, served)
		})
	}
}

// checkServerInfo checks the fields a client reads for limits.
func checkServerInfo(t *testing.T, wire string, served map[string]any) {
	t.Helper()
	num := func(m map[string]any, k string) float64 {
		f, ok := m[k].(float64)
		if !ok {
			t.Errorf("%s: field %q is %T %v, want a number", wire, k, m[k], m[k])
		}
		return f
	}
	switch wire {
	case "llamacpp":
		props, _ := served["/props"].(map[string]any)
		if num(props, "total_slots") != 4 {
			t.Errorf("/props total_slots %v, want 4", props["total_slots"])
		}
		def, _ := props["default_generation_settings"].(map[string]any)
		if num(def, "n_ctx") != 4096 || def["speculative"] != true {
			t.Errorf("/props default_generation_settings: %v", def)
		}
		slots, _ := served["/slots"].([]any)
		if len(slots) != 4 {
			t.Fatalf("/slots has %d slots, want 4", len(slots))
		}
		s0, _ := slots[0].(map[string]any)
		params, _ := s0["params"].(map[string]any)
		if num(s0, "n_ctx") != 4096 || s0["is_processing"] != false || num(params, "speculative.n_max") != 3 {
			t.Errorf("/slots[0]: %v", s0)
		}
	case "sglang":
		info, _ := served["/get_server_info"].(map[string]any)
		if num(info, "max_running_requests") != 4 || num(info, "chunked_prefill_size") != 512 || num(info, "context_length") != 4096 ||
			num(info, "max_total_num_tokens") <= 0 || info["version"] == nil {
			t.Errorf("/get_server_info: %v", info)
		}
		if states, _ := info["internal_states"].([]any); len(states) != 1 {
			t.Errorf("/get_server_info internal_states: %v", info["internal_states"])
		}
	case "tgi":
		info, _ := served["/info"].(map[string]any)
		if num(info, "max_concurrent_requests") != 4 || num(info, "max_total_tokens") != 4096 || info["router"] != "text-generation-router" {
			t.Errorf("/info: %v", info)
		}
	}
}

// bubbleClock is a Clock on a synctest bubble's time.
type bubbleClock struct{ epoch time.Time }

func (c *bubbleClock) Now() time.Duration             { return time.Since(c.epoch) }
func (c *bubbleClock) Wall(d time.Duration) time.Time { return c.epoch.Add(d) }
func (c *bubbleClock) SleepUntil(ctx context.Context, t time.Duration) error {
	tm := time.NewTimer(t - c.Now())
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestSlotsShowRunning: a slot processing a request is marked so, and ?fail_on_no_slot=1
// answers 503 when every slot is busy, as llama.cpp does. The engine runs in a synctest
// bubble, so "the request is running" is a state the test waits for, not a time.
func TestSlotsShowRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := New(Config{Wire: "llamacpp", MaxNumSeqs: 1, Seed: 1, Clock: &bubbleClock{epoch: time.Now()}})
		if err != nil {
			t.Fatal(err)
		}
		ln := pipenet.New()
		srv := &http.Server{Handler: e.Handler()}
		go srv.Serve(ln)
		defer func() { srv.Close(); e.Close() }()
		client := &http.Client{Transport: &http.Transport{DialContext: ln.Dial}}
		get := func(path string) (int, []any) {
			resp, err := client.Get("http://engine" + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var v []any
			json.NewDecoder(resp.Body).Decode(&v)
			return resp.StatusCode, v
		}
		if _, v := get("/slots"); len(v) != 1 || v[0].(map[string]any)["is_processing"] != false {
			t.Errorf("/slots of an idle engine: %v", v)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := client.Post("http://engine/v1/completions", "application/json",
				strings.NewReader(`{"model":"llama-3.1-8b","prompt":"hi","max_tokens":400,"ignore_eos":true,"stream":true}`))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		synctest.Wait()
		if _, v := get("/slots"); len(v) != 1 || v[0].(map[string]any)["is_processing"] != true {
			t.Errorf("/slots while a request runs: %v", v)
		}
		if code, _ := get("/slots?fail_on_no_slot=1"); code != http.StatusServiceUnavailable {
			t.Errorf("/slots?fail_on_no_slot=1 with every slot busy: status %d, want 503", code)
		}
		<-done
		if _, v := get("/slots?fail_on_no_slot=1"); len(v) != 1 || v[0].(map[string]any)["is_processing"] != false {
			t.Errorf("/slots after the request ended: %v", v)
		}
	})
}
