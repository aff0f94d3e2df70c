package engineadapter

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/internal/pipenet"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
)

// scrapeEngine reads the engine's /metrics over ln: every unlabelled sample by name.
func scrapeEngine(t *testing.T, ln *pipenet.Net) map[string]float64 {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: ln.Dial}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://engine/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		name, _, _ = strings.Cut(name, "{")
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// TestCancelBurstFreesTheEngine: 24 long requests (2,000 output tokens each) start together on
// the engine over HTTP, on the bubble's virtual clock; 16 of them are cancelled by the client
// 300 to 600 ms after sending (cancel_after_ms). Mid-run the engine's /metrics shows all 24
// running and KV cache in use; once the 8 others have finished, running, waiting and KV usage
// are back to idle and llmbench:requests_aborted counts the 16, whose records are cancelled
// with the tokens they received.
func TestCancelBurstFreesTheEngine(t *testing.T) {
	const n, cancelled = 24, 16
	var reqs []traces.Request
	for i := range n {
		q := traces.Request{ID: fmt.Sprintf("c%02d", i), Arrival: time.Duration(i) * time.Millisecond, InputTokens: 512, OutputTokens: 2000}
		if i < cancelled {
			q.CancelAfter = time.Duration(300+20*i) * time.Millisecond
		}
		reqs = append(reqs, q)
	}
	var recs []metrics.Record
	var mid, after map[string]float64
	synctest.Test(t, func(t *testing.T) {
		eng, ln, stop := bubbleEngine(t, refengine.Config{Seed: 1, Clock: &bubbleClock{epoch: time.Now()}})
		defer stop()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			replayInto(t, reqs, bubbleOptions(eng, ln, "vllm", "completions", true), &recs)
		}()
		time.Sleep(200 * time.Millisecond) // virtual: before the first cancel
		synctest.Wait()
		mid = scrapeEngine(t, ln)
		wg.Wait()
		time.Sleep(time.Second) // virtual: past the engine's last step
		synctest.Wait()
		after = scrapeEngine(t, ln)
	})
	if mid["vllm:num_requests_running"] != n || !(mid["vllm:kv_cache_usage_perc"] > 0) || mid["llmbench:requests_aborted_total"] != 0 {
		t.Fatalf("mid-run: running %v, KV usage %v, aborted %v; want %d running with KV in use and none aborted",
			mid["vllm:num_requests_running"], mid["vllm:kv_cache_usage_perc"], mid["llmbench:requests_aborted_total"], n)
	}
	if after["vllm:num_requests_running"] != 0 || after["vllm:num_requests_waiting"] != 0 || after["vllm:kv_cache_usage_perc"] != 0 {
		t.Errorf("after: running %v, waiting %v, KV usage %v; want the engine idle",
			after["vllm:num_requests_running"], after["vllm:num_requests_waiting"], after["vllm:kv_cache_usage_perc"])
	}
	if after["llmbench:requests_aborted_total"] != cancelled || after["vllm:request_success_total"] != n-cancelled {
		t.Errorf("after: aborted %v, succeeded %v; want %d and %d", after["llmbench:requests_aborted_total"], after["vllm:request_success_total"], cancelled, n-cancelled)
	}
	var got int
	for _, r := range recs {
		wantCancel := r.ID < fmt.Sprintf("c%02d", cancelled)
		switch {
		case wantCancel && !r.Cancelled():
			t.Errorf("%s: %q %s, want cancelled", r.ID, r.Failure, r.Error)
		case !wantCancel && !r.OK():
			t.Errorf("%s: %q %s, want success", r.ID, r.Failure, r.Error)
		case wantCancel && (r.OutputTokens == 0 || r.OutputTokens >= 2000):
			t.Errorf("%s: cancelled with %d tokens, want the part received before the cancel", r.ID, r.OutputTokens)
		}
		if r.Cancelled() {
			got++
		}
	}
	if got != cancelled {
		t.Errorf("%d records cancelled, want %d", got, cancelled)
	}
}

// TestSimulateRefusesCancellations: a trace with cancel_after_ms is refused by simulate with an
// error that says how many requests carry it and what to do, instead of simulating them as
// completed.
func TestSimulateRefusesCancellations(t *testing.T) {
	reqs := []traces.Request{
		{ID: "a", InputTokens: 10, OutputTokens: 10},
		{ID: "b", Arrival: time.Second, InputTokens: 10, OutputTokens: 10, CancelAfter: time.Second},
	}
	sim := &Simulator{Config: refengine.Config{Seed: 1}, RateScale: 1}
	_, err := runner.Execute(context.Background(), runner.Options{Requests: reqs, OutDir: t.TempDir(),
		Info: metrics.RunInfo{Mode: "simulated"}}, sim.Produce)
	if err == nil || !strings.Contains(err.Error(), "1 requests of the trace carry cancel_after_ms") || !strings.Contains(err.Error(), "llmbench run") {
		t.Fatalf("err %v, want the refusal naming cancel_after_ms and llmbench run", err)
	}
}
