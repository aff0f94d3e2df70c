package refengine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustFaults(t testing.TB, spec string) Faults {
	t.Helper()
	f, err := ParseFaults(spec)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func streamRaw(t testing.TB, url string) (*http.Response, []byte, error) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/completions",
		strings.NewReader(`{"prompt":"fault test","max_tokens":40,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestFaultsEachProduceTheirEffect(t *testing.T) {
	for _, tc := range []struct {
		spec  string
		check func(t *testing.T, resp *http.Response, body []byte, err error)
	}{
		{"reset-before=1", func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err == nil {
				t.Fatalf("want a transport error, got %d %q", resp.StatusCode, body)
			}
		}},
		{"status-429=1", statusCheck(429)},
		{"status-500=1", statusCheck(500)},
		{"status-503=1", statusCheck(503)},
		{"reset-mid=1", func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err == nil || resp.StatusCode != 200 || !strings.HasPrefix(string(body), "data: {") || strings.Contains(string(body), "[DONE]") {
				t.Fatalf("want a 200 stream cut mid-way with an error: err=%v body=%q", err, body)
			}
		}},
		{"malformed=1", func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || !strings.Contains(string(body), "\n\ndata: \x00\xffnot-an-sse-event\n\n") || !strings.HasSuffix(string(body), doneEvent) {
				t.Fatalf("want one malformed line in a complete stream: err=%v body=%q", err, body)
			}
		}},
		{"bad-json=1", func(t *testing.T, resp *http.Response, body []byte, err error) {
			bad := 0
			for _, ev := range strings.Split(string(body), "\n\n") {
				if p, ok := strings.CutPrefix(ev, "data: {"); ok && !json.Valid([]byte("{"+p)) {
					bad++
				}
			}
			if err != nil || bad != 1 {
				t.Fatalf("want exactly one invalid JSON chunk, got %d: %q", bad, body)
			}
		}},
		{"no-done=1", func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || strings.Contains(string(body), "[DONE]") || !strings.Contains(string(body), `"finish_reason":"length"`) {
				t.Fatalf("want a complete stream without [DONE]: %q", body)
			}
		}},
		{"stall=1:200ms", completeStream},
		{"slow-headers=1:200ms", completeStream},
		{"early-eos=1", func(t *testing.T, resp *http.Response, body []byte, err error) {
			if err != nil || !strings.Contains(string(body), `"finish_reason":"stop"`) || strings.Count(string(body), "data: {") >= 40 {
				t.Fatalf("want an early stop: %q", body)
			}
		}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			e, url := startEngine(t, Config{Faults: mustFaults(t, tc.spec), TimeScale: 100})
			resp, body, err := streamRaw(t, url)
			tc.check(t, resp, body, err)
			kind, _, _ := strings.Cut(tc.spec, "=")
			if n := e.FaultsInjected()[kind]; n != 1 {
				t.Fatalf("engine counted %d %s faults: %v", n, kind, e.FaultsInjected())
			}
		})
	}
}

func statusCheck(code int) func(t *testing.T, resp *http.Response, body []byte, err error) {
	return func(t *testing.T, resp *http.Response, body []byte, err error) {
		var eb errorBody
		if err != nil || resp.StatusCode != code || json.Unmarshal(body, &eb) != nil || eb.Error.Message == "" {
			t.Fatalf("want %d with an OpenAI error body: %v %q", code, err, body)
		}
	}
}

func completeStream(t *testing.T, resp *http.Response, body []byte, err error) {
	if err != nil || resp.StatusCode != 200 || strings.Count(string(body), "data: {") != 40 || !strings.HasSuffix(string(body), doneEvent) {
		t.Fatalf("want a complete 40-chunk stream: %v %q", err, body)
	}
}

// heldClock is a virtual clock whose steps never end until the engine closes, so requests pile
// up in the queue.
type heldClock struct{ VirtualClock }

func (c *heldClock) SleepUntil(ctx context.Context, t time.Duration) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestOverloadQueue(t *testing.T) {
	e, url := startEngine(t, Config{Faults: mustFaults(t, "overload=1"), MaxNumSeqs: 1, Clock: &heldClock{}})
	r := &request{promptTokens: 4, maxTokens: 4, promptIDs: []int{1, 2, 3, 4}}
	e.submit(r, "a", "a", nil, nil, nil)
	e.submit(r, "b", "b", nil, nil, nil)
	resp, body := post(t, url+"/v1/completions", `{"prompt":"x","max_tokens":2}`)
	if resp.StatusCode != 429 || !strings.Contains(string(body), "overloaded") {
		t.Fatalf("want 429 overloaded, got %d %s", resp.StatusCode, body)
	}
}

func TestFaultDrawsAreReproducible(t *testing.T) {
	f := mustFaults(t, "status-503=0.3,seed=9")
	hits := 0
	for i := uint64(0); i < 1000; i++ {
		a, b := f.plan(i, 0), f.plan(i, 0)
		if a != b {
			t.Fatal("plan differs for the same key")
		}
		if a.status == 503 {
			hits++
		}
	}
	if hits < 250 || hits > 350 {
		t.Fatalf("%d of 1000 requests got 503 at p=0.3", hits)
	}
}

func TestParseFaults(t *testing.T) {
	f, err := ParseFaults("reset-mid=0.1, status-503=0.1,stall=0.1:500ms,malformed=0.05,overload=64,seed=3")
	if err != nil {
		t.Fatal(err)
	}
	if f.ResetMid != 0.1 || f.Status503 != 0.1 || f.Stall != 0.1 || f.StallFor != 500*time.Millisecond || f.Malformed != 0.05 || f.OverloadQueue != 64 || f.Seed != 3 {
		t.Fatalf("%+v", f)
	}
	if g, err := ParseFaults(f.String()); err != nil || g != f {
		t.Fatalf("round trip %q: %+v %v", f.String(), g, err)
	}
	if f, _ := ParseFaults("stall=0.5"); f.StallFor != 500*time.Millisecond {
		t.Fatalf("default stall duration %v", f.StallFor)
	}
	for spec, want := range map[string]string{
		"bogus=0.1":           "unknown fault",
		"reset-mid":           "key=value",
		"reset-mid=2":         "[0, 1]",
		"reset-mid=x":         "[0, 1]",
		"stall=0.1:fast":      "duration",
		"stall=0.1:-1s":       "duration",
		"malformed=0.1:1s":    "takes no duration",
		"overload=0":          "queue length",
		"seed=-1":             "seed",
		"reset-mid=0.1,,":     "empty",
		"no-done=1,no-done=1": "twice",
		"from=soon":           "duration",
		"from=20s,until=10s":  "after",
	} {
		if _, err := ParseFaults(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one mentioning %q", spec, err, want)
		}
	}
}

func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{"", "reset-mid=0.1,status-503=0.1,stall=0.1:500ms,malformed=0.05", "overload=3,seed=1", "slow-headers=1:2s", "=", ",", "stall=1:", "status-500=1,from=1s,until=2s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		fl, err := ParseFaults(spec)
		if err != nil {
			return
		}
		again, err := ParseFaults(fl.String())
		if err != nil || again != fl {
			t.Fatalf("%q parsed to %+v, whose String %q gives %+v, %v", spec, fl, fl.String(), again, err)
		}
	})
}

func TestFaultWindow(t *testing.T) {
	f := mustFaults(t, "status-503=1,from=10s,until=20s")
	for at, want := range map[time.Duration]int{0: 0, 10 * time.Second: 503, 19 * time.Second: 503, 20 * time.Second: 0} {
		if got := f.plan(1, at).status; got != want {
			t.Errorf("at %v: status %d, want %d", at, got, want)
		}
	}
	reqs := []SimRequest{{ID: "a", PromptTokens: 5, MaxTokens: 50}, {ID: "b", Arrival: 15 * time.Second, PromptTokens: 5, MaxTokens: 50}}
	res, err := Simulate(reqs, Config{Faults: mustFaults(t, "early-eos=1,from=10s")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Timelines[0].OutputTokens != 50 || res.Timelines[1].OutputTokens >= 50 {
		t.Fatalf("early-eos outside/inside the window: %d, %d tokens", res.Timelines[0].OutputTokens, res.Timelines[1].OutputTokens)
	}
}

// TestFaultStressLeavesEngineClean runs concurrent streams through every mid-stream fault and
// checks that the engine ends with nothing running, nothing waiting and no KV blocks held.
func TestFaultStressLeavesEngineClean(t *testing.T) {
	spec := "reset-mid=0.2,stall=0.2:20ms,malformed=0.1,bad-json=0.1,no-done=0.1,status-503=0.1,reset-before=0.05,early-eos=0.2,seed=5"
	e, url := startEngine(t, Config{Faults: mustFaults(t, spec), TimeScale: 100, SpecK: 3, Disaggregated: true})
	var wg sync.WaitGroup
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", url+"/v1/completions",
				strings.NewReader(fmt.Sprintf(`{"prompt":"stress %d","max_tokens":%d,"stream":%v}`, i, 5+i, i%4 != 0)))
			req.Header.Set("X-Request-Id", fmt.Sprint("s", i))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	// One clean request after the storm: by the time it finishes, every aborted request has
	// been dropped by an earlier step.
	resp, body := post(t, url+"/v1/completions", `{"prompt":"after","max_tokens":3}`, "X-Request-Id", "clean-9")
	if resp.StatusCode != 200 && resp.StatusCode != 503 {
		t.Fatalf("clean request: %d %s", resp.StatusCode, body)
	}
	m := string(e.metricsText())
	for _, want := range []string{
		`vllm:num_requests_running{model_name="llama-3.1-8b"} 0`,
		`vllm:num_requests_waiting{model_name="llama-3.1-8b"} 0`,
		`vllm:kv_cache_usage_perc{model_name="llama-3.1-8b"} 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("after the storm /metrics lacks %q", want)
		}
	}
	if e.Panics() != 0 {
		t.Fatal("panics")
	}
}
