package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// fakePoint is a producer that serves every request in 20 ms and, when stopAt > 0, reports
// the point stopped over-saturated at that time, as the saturation watch does.
func fakePoint(load float64, stopAt float64) Producer {
	return func(_ context.Context, trace traces.Source, sink func(*metrics.Record)) (*Produced, error) {
		reqs, err := trace.Requests()
		if err != nil {
			return nil, err
		}
		for _, q := range reqs {
			at := int64(float64(q.Arrival) / load)
			ms := int64(time.Millisecond)
			sink(&metrics.Record{ID: q.ID, Intended: at, Dispatched: at, Sent: at, Headers: at + ms, FirstToken: at + 10*ms, End: at + 20*ms,
				InputTokens: q.InputTokens, OutputTokens: 2, RequestedTokens: 2, Status: 200, TokenSource: metrics.TokensFromUsage,
				Chunks: []metrics.Chunk{{T: at + 10*ms, Tokens: 1}, {T: at + 20*ms, Tokens: 1}}})
		}
		p := &Produced{Start: time.Unix(0, 0)}
		if stopAt > 0 {
			v := metrics.SaturationVerdict{Saturated: true, Stopped: true, AtS: stopAt, OfferedPerS: load, CompletedPerS: 1}
			v.Reason = metrics.OverSaturated(v.OfferedPerS, v.CompletedPerS) + ": test"
			p.Saturation = &v
		}
		return p, nil
	}
}

// TestSweepSkipsPointsAboveAStoppedOne: with explicit points, once a point is stopped
// over-saturated the higher points are not measured but listed as skipped, a lower one given
// after it still is, and the stopped point is saturated in the words of its verdict.
func TestSweepSkipsPointsAboveAStoppedOne(t *testing.T) {
	var reqs []traces.Request
	for i := range 40 {
		reqs = append(reqs, traces.Request{ID: "r" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Arrival: time.Duration(i) * 100 * time.Millisecond, InputTokens: 10, OutputTokens: 2})
	}
	var measured []float64
	slo, err := metrics.ParseSLO("ttft=1s")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Sweep(context.Background(), SweepOptions{Requests: reqs, Points: []float64{1, 4, 8, 16, 2}, Target: 0.9, OutDir: t.TempDir(),
		Metrics: metrics.Options{SLO: slo}}, func(load float64) (Producer, metrics.RunInfo, error) {
		measured = append(measured, load)
		stop := 0.0
		if load >= 4 {
			stop = 31
		}
		return fakePoint(load, stop), metrics.RunInfo{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := measured; len(got) != 3 || got[0] != 1 || got[1] != 4 || got[2] != 2 {
		t.Fatalf("measured %v, want 1, 4 and 2", got)
	}
	if len(res.Skipped) != 2 || res.Skipped[0].Rate != 8 || res.Skipped[1].Rate != 16 || !strings.Contains(res.Skipped[0].Reason, "lower load 4 was stopped over-saturated") {
		t.Errorf("skipped %+v", res.Skipped)
	}
	for _, p := range res.Points {
		stopped := p.Rate == 4
		if p.Saturated != stopped || (p.StoppedAtS == 31) != stopped || stopped && !strings.HasPrefix(p.Reason, "over-saturated at 4 req/s (completed 1 req/s)") {
			t.Errorf("point %+v", p)
		}
	}
	if res.Capacity.Rate != 2 {
		t.Errorf("capacity %+v", res.Capacity)
	}
}

// TestRunStoppedAtSaturationIsNoFailedRun: the requests a stop at saturation cancelled
// (metrics.KindCancelled, counted apart from failures) do not make the run a failed one, nor
// count in the failure rate of the requests left; server failures among those still do.
func TestRunStoppedAtSaturationIsNoFailedRun(t *testing.T) {
	s := &metrics.Summary{Requests: metrics.Requests{Total: 100, Succeeded: 10, Cancelled: 90, Failures: map[string]int{}}}
	s.Saturation = &metrics.SaturationVerdict{Saturated: true, Stopped: true}
	if why := RunFailure(s, 0.05); why != "" {
		t.Errorf("stopped at saturation: %s", why)
	}
	s.Requests.Failed, s.Requests.Total, s.Requests.Failures["http_5xx"] = 5, 105, 5
	if why := RunFailure(s, 0.05); !strings.Contains(why, "5 of 15") {
		t.Errorf("5 server failures of 15 requests left: %q", why)
	}
	s.Saturation = nil // not stopped: the failure rate is over all 105 requests (4.8%)
	if why := RunFailure(s, 0.05); why != "" {
		t.Errorf("5 of 105 failed without a stop: %q", why)
	}
}
