package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/racebuild"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

// probeTraceFile writes a probe trace of n requests at rate req/s and returns its path.
func probeTraceFile(t *testing.T, preset string, n int, rate float64, lengths []int) (string, []traces.Request) {
	t.Helper()
	reqs, err := workloads.GenerateProbes(workloads.ProbeSpec{Preset: preset, Seed: 1, MaxRequests: n, Lengths: lengths,
		Arrival: workloads.ArrivalSpec{Process: workloads.Poisson, Rate: rate}, Duration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), preset+".jsonl")
	if err := traces.WriteFile(path, reqs); err != nil {
		t.Fatal(err)
	}
	return path, reqs
}

// runQualityAB runs ab on the embedded engine (error model on, the default) and returns its
// result and exit code.
// The time scale is modest and the idle and first-token timeouts are off, so that a busy
// machine's hiccups (which the scaled clock turns into long simulated gaps) fail no request:
// these tests grade answers, not latency.
func runQualityAB(t *testing.T, trace, timeScale string, args ...string) (*runner.ABResult, int) {
	t.Helper()
	if testing.Short() {
		t.Skip("an A/B over HTTP: skipped in -short mode")
	}
	out := t.TempDir()
	app := newTestApp(nil)
	code := app.cli(append([]string{"ab", "--trace", trace, "--time-scale", timeScale, "--runs", "1", "--warmup-requests", "2",
		"--timeout-idle", "0", "--timeout-first-token", "0", "--format", "json", "--out", out, "--no-progress"}, args...)...)
	if code != exitOK && code != exitRegression {
		t.Fatalf("ab: exit %d\n%s", code, app.err.String())
	}
	data, err := os.ReadFile(filepath.Join(out, "ab.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res runner.ABResult
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Comparison.Quality == nil {
		t.Fatalf("no paired quality in ab.json")
	}
	return &res, code
}

// impliedDrop is the pass-rate change the error model implies for INT4 against BF16, mean
// over the requests: each request's error p (refengine.Quality's formula) becomes
// min(0.95, INT4·p).
func impliedDrop(reqs []traces.Request, base func(r *traces.Request) float64) float64 {
	q := refengine.DefaultQuality()
	sum := 0.0
	for i := range reqs {
		p := base(&reqs[i])
		sum += min(0.95, q.INT4*p) - min(0.95, p)
	}
	return -sum / float64(len(reqs))
}

// checkDrop holds the paired quality of an INT4 arm to the model: a drop whose interval
// excludes zero, within four standard errors of the implied drop, and nested errors (no
// request passes on INT4 that fails on BF16).
func checkDrop(t *testing.T, q *metrics.QualityComparison, n int, implied float64) {
	t.Helper()
	if q.Paired != n || !(q.CIHigh < 0) || q.CandOnly != 0 || q.BaseOnly == 0 {
		t.Fatalf("paired quality %+v: want %d pairs, a drop with an interval below zero, no request better on INT4", *q, n)
	}
	se := math.Sqrt(-implied / float64(n)) // discordant pairs are (nearly) all one-sided
	t.Logf("pass rate %.1f%% -> %.1f%%: %+.1f pp [%+.1f, %+.1f], the model implies %+.1f pp", 100*q.BaseRate, 100*q.CandRate, 100*q.Delta, 100*q.CILow, 100*q.CIHigh, 100*implied)
	if d := q.Delta - implied; math.Abs(d) > 4*se {
		t.Errorf("pass rate changed %.1f pp, the error model implies %.1f pp (± %.1f): %+v", 100*q.Delta, 100*implied, 400*se, *q)
	}
}

// TestABQualityINT4ToolCalling: ab of INT4 weights against BF16 on the tool-calling probe
// shows the drop the error model implies (first-round calls fail at Tool, retries at Retry,
// tripled under INT4) with a paired interval excluding zero, and --fail-on 'quality<-1pp'
// gates on it.
func TestABQualityINT4ToolCalling(t *testing.T) {
	racebuild.Heavy(t)
	trace, reqs := probeTraceFile(t, "tool-calling", 200, 20, nil)
	res, code := runQualityAB(t, trace, "5", "--b-engine", "weight-dtype=int4", "--fail-on", "quality<-1pp")
	q := refengine.DefaultQuality()
	checkDrop(t, res.Comparison.Quality, len(reqs), impliedDrop(reqs, func(r *traces.Request) float64 {
		if r.Class == "tool/retry" {
			return q.Retry
		}
		return q.Tool
	}))
	if code != exitRegression {
		t.Errorf("--fail-on quality<-1pp: exit %d, want %d", code, exitRegression)
	}
}

// TestABQualityINT4LongContext: the same on the long-context probe, where the implied drop
// follows the recall curve (depth of the asked fact, document length).
func TestABQualityINT4LongContext(t *testing.T) {
	racebuild.Heavy(t)
	trace, reqs := probeTraceFile(t, "long-context-probe", 150, 3, []int{4096, 16384})
	res, _ := runQualityAB(t, trace, "10", "--b-engine", "weight-dtype=int4")
	q := refengine.DefaultQuality()
	depth := map[string]float64{"begin": 0.1, "middle": 0.5, "end": 0.9}
	checkDrop(t, res.Comparison.Quality, len(reqs), impliedDrop(reqs, func(r *traces.Request) float64 {
		d := depth[r.Class[strings.LastIndex(r.Class, "/")+1:]]
		n := float64(r.InputTokens)
		return q.Recall + q.Middle*4*d*(1-d)*n/(n+float64(q.HalfContext))
	}))
}

// TestABQualitySpeculativeIdentical: speculative decoding changes speed, never answers: ab of
// spec-k=4 against none on the tool-calling probe grades identically (no discordant pair,
// delta 0) and every tool call is byte-identical.
func TestABQualitySpeculativeIdentical(t *testing.T) {
	racebuild.Heavy(t)
	trace, reqs := probeTraceFile(t, "tool-calling", 120, 20, nil)
	res, _ := runQualityAB(t, trace, "5", "--b-engine", "spec-k=4,spec-alpha=0.8")
	q := res.Comparison.Quality
	if q.Paired != len(reqs) || q.Delta != 0 || q.BaseOnly != 0 || q.CandOnly != 0 || q.BaseRate == 1 {
		t.Fatalf("paired quality %+v: want identical grades (and some failures to compare)", *q)
	}
	var arms [2]map[string]metrics.Record
	for i, name := range []string{"A", "B"} {
		recs, err := metrics.ReadRecords(filepath.Join(res.Dirs[name][0], runner.RecordsFile))
		if err != nil {
			t.Fatal(err)
		}
		arms[i] = map[string]metrics.Record{}
		for _, r := range recs {
			arms[i][r.ID] = r
		}
	}
	for id, a := range arms[0] {
		b := arms[1][id]
		if len(a.ToolCalls) == 0 || !reflect.DeepEqual(a.ToolCalls, b.ToolCalls) || a.OutputText != b.OutputText {
			t.Fatalf("%s: outputs differ with speculative decoding:\nA %+v %q\nB %+v %q", id, a.ToolCalls, a.OutputText, b.ToolCalls, b.OutputText)
		}
	}
	if len(arms[0]) != len(reqs) {
		t.Fatalf("%d records of %d requests", len(arms[0]), len(reqs))
	}
}
