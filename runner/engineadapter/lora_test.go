package engineadapter

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/traces"
)

// loraTrace is n requests 40 ms apart cycling over adapters a0..a3, then one request to the
// base model (no model field) and one to a model the engine does not serve.
func loraTrace(n int) []traces.Request {
	var reqs []traces.Request
	for i := 0; i < n; i++ {
		reqs = append(reqs, traces.Request{ID: fmt.Sprintf("q%02d", i), Arrival: time.Duration(i) * 40 * time.Millisecond,
			InputTokens: 256, OutputTokens: 48, Model: fmt.Sprintf("a%d", i%4)})
	}
	end := time.Duration(n) * 40 * time.Millisecond
	return append(reqs,
		traces.Request{ID: "base", Arrival: end, InputTokens: 256, OutputTokens: 48},
		traces.Request{ID: "unknown", Arrival: end, InputTokens: 256, OutputTokens: 48, Model: "nope"})
}

type loraArm struct {
	recs    []metrics.Record
	stats   refengine.LoRAStats
	metrics string
	models  string
	truth   map[string]time.Duration // ground-truth TTFT per request id
}

// serveLoRA replays loraTrace over HTTP against an engine with 4 adapters of rank 64 on slots
// slots, on the bubble's virtual clock.
func serveLoRA(t *testing.T, slots int) loraArm {
	t.Helper()
	var arm loraArm
	synctest.Test(t, func(t *testing.T) {
		cfg := refengine.Config{Seed: 1, Clock: &bubbleClock{epoch: time.Now()}, MaxLoRAs: slots}
		for i := 0; i < 4; i++ {
			cfg.LoRAs = append(cfg.LoRAs, refengine.LoRA{Name: fmt.Sprintf("a%d", i), Rank: 64})
		}
		eng, ln, stop := bubbleEngine(t, cfg)
		defer stop()
		replayInto(t, loraTrace(40), bubbleOptions(eng, ln, "vllm", "chat", true), &arm.recs)
		arm.stats = eng.LoRAStats()
		hc := &http.Client{Transport: &http.Transport{DialContext: ln.Dial}}
		defer hc.CloseIdleConnections()
		arm.metrics = get(t, hc, "http://engine/metrics")
		arm.models = get(t, hc, "http://engine/v1/models")
		arm.truth = map[string]time.Duration{}
		for _, r := range arm.recs {
			if tl, ok := eng.Timeline(r.ID); ok && len(tl.Emissions) > 0 {
				arm.truth[r.ID] = tl.Emissions[0].At - tl.Arrival
			}
		}
	})
	return arm
}

func get(t *testing.T, hc *http.Client, url string) string {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// meanTTFT is the mean client TTFT of the successful adapter requests.
func (a *loraArm) meanTTFT(t *testing.T) time.Duration {
	var sum time.Duration
	n := 0
	for _, r := range a.recs {
		if r.OK() && strings.HasPrefix(r.ID, "q") {
			sum += time.Duration(r.FirstToken - r.Sent)
			n++
		}
	}
	if n != 40 {
		t.Fatalf("%d adapter requests succeeded, want 40", n)
	}
	return sum / time.Duration(n)
}

// Four adapters on two slots swap (requests whose adapter finds no free slot wait while
// the others are served), on four they load once each; the client's TTFT is the
// engine's ground truth in both, and two slots cost TTFT. An unknown model fails as
// model_not_found with vLLM's 404, and the base model needs no slot.
func TestLoRASlotsOverHTTP(t *testing.T) {
	four, two := serveLoRA(t, 4), serveLoRA(t, 2)
	if four.stats.Loads != 4 || four.stats.Evictions != 0 {
		t.Errorf("4 slots: %d loads, %d evictions; want 4 and 0", four.stats.Loads, four.stats.Evictions)
	}
	// Every adapter is loaded at least once and, the two slots full, each later load evicts.
	if two.stats.Evictions < 2 || two.stats.Loads != two.stats.Evictions+2 {
		t.Errorf("2 slots: %d loads, %d evictions; want at least 2 evictions and loads = evictions + 2", two.stats.Loads, two.stats.Evictions)
	}
	for _, arm := range []*loraArm{&four, &two} {
		want := fmt.Sprintf("llmbench:lora_loads_total{model_name=\"llama-3.1-8b\"} %d\n", arm.stats.Loads)
		if !strings.Contains(arm.metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
		for _, id := range []string{`"id":"a0"`, `"id":"a3"`, `"parent":"llama-3.1-8b"`} {
			if !strings.Contains(arm.models, id) {
				t.Errorf("/v1/models lacks %s: %s", id, arm.models)
			}
		}
		for _, r := range arm.recs {
			switch r.ID {
			case "unknown":
				if r.Failure != metrics.FailModelNotFound || r.Status != 404 || r.Model != "nope" ||
					!strings.Contains(r.Error, "The model `nope` does not exist.") || r.ErrorType != "NotFoundError" {
					t.Errorf("unknown model: %s %d %q %q %q", r.Failure, r.Status, r.Model, r.Error, r.ErrorType)
				}
				continue
			case "base":
				if !r.OK() || r.Model != "" {
					t.Errorf("base model request: %s %s model %q", r.Failure, r.Error, r.Model)
				}
			}
			got, truth := time.Duration(r.FirstToken-r.Sent), arm.truth[r.ID]
			if d := got - truth; d < 0 || d > time.Millisecond {
				t.Errorf("%s: client TTFT %v, engine's %v", r.ID, got, truth)
			}
		}
	}
	if m4, m2 := four.meanTTFT(t), two.meanTTFT(t); m2 <= m4 {
		t.Errorf("mean TTFT on 2 slots %v is not above 4 slots' %v", m2, m4)
	} else {
		t.Logf("mean TTFT: 4 slots %v, 2 slots %v (%d loads)", m4, m2, two.stats.Loads)
	}
}
