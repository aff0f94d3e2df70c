package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
)

// TestMergeCarriesTheWholeTraceFingerprint: `run --shard 0/2` and `--shard 1/2` against one
// `llmbench serve`, then `merge`: the merged summary's run.trace_fingerprint is the whole
// trace's, equal to a one-machine run's of the same trace (so compare pairs them without
// --allow-different-trace), while each shard's summary keeps its own subset's. Shards of two
// different traces are refused by merge, naming both.
func TestMergeCarriesTheWholeTraceFingerprint(t *testing.T) {
	dir := t.TempDir()
	trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "w", n: 60, spacing: 2 * time.Millisecond, in: 16, out: 4})
	url := serveLoopback(t, "--time-scale", "50")
	single := filepath.Join(dir, "single")
	mustRun(t, newTestApp(nil), "run", "--trace", trace, "--endpoint", url, "--no-progress", "-o", single)
	var shards []string
	for i := range 2 {
		d := filepath.Join(dir, "shard-"+string(rune('0'+i)))
		mustRun(t, newTestApp(nil), "run", "--trace", trace, "--endpoint", url, "--no-progress", "--shard", string(rune('0'+i))+"/2", "-o", d)
		shards = append(shards, d)
	}
	merged := filepath.Join(dir, "merged")
	mustRun(t, newTestApp(nil), append([]string{"merge", "-o", merged}, shards...)...)

	src, err := traces.OpenFile(trace, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := runner.FingerprintTrace(src)
	if err != nil {
		t.Fatal(err)
	}
	one, m := readSummaryStruct(t, single), readMerged(t, merged)
	if one.Run.TraceFingerprint == nil || *one.Run.TraceFingerprint != *whole {
		t.Fatalf("the single run's fingerprint %+v, the trace's %+v", one.Run.TraceFingerprint, whole)
	}
	if m.Run.TraceFingerprint == nil || *m.Run.TraceFingerprint != *whole || m.Run.TraceFingerprint.Requests != len(ids) {
		t.Fatalf("merged run.trace_fingerprint %+v, want the whole trace's %+v", m.Run.TraceFingerprint, whole)
	}
	subsets := 0
	for _, d := range shards {
		s := readSummaryStruct(t, d)
		if s.Run.TraceFingerprint == nil || s.Run.TraceFingerprint.Requests >= len(ids) || s.Run.Shard.TraceFingerprint != whole.Digest {
			t.Errorf("%s: run.trace_fingerprint %+v (want its subset), run.shard %+v", d, s.Run.TraceFingerprint, s.Run.Shard)
			continue
		}
		subsets += s.Run.TraceFingerprint.Requests
	}
	if subsets != len(ids) {
		t.Errorf("the shards' subsets count %d requests, the trace %d", subsets, len(ids))
	}
	cmp := newTestApp(nil)
	if code := cmp.cli("compare", single, merged); code != 0 && code != 1 {
		t.Fatalf("compare single merged: exit %d\n%s", code, cmp.err.String())
	}
	if strings.Contains(cmp.err.String()+cmp.out.String(), "different traces") {
		t.Fatalf("compare does not recognise the merged run's trace:\n%s%s", cmp.out.String(), cmp.err.String())
	}

	// A shard of another trace (same ids, other lengths) is refused.
	other, _ := writeTrace(t, dir, "other.jsonl", traceSpec{prefix: "w", n: 60, spacing: 2 * time.Millisecond, in: 17, out: 4})
	foreign := filepath.Join(dir, "foreign-1")
	mustRun(t, newTestApp(nil), "run", "--trace", other, "--endpoint", url, "--no-progress", "--shard", "1/2", "-o", foreign)
	bad := newTestApp(nil)
	if code := bad.cli("merge", "-o", filepath.Join(dir, "mixed"), shards[0], foreign); code != exitBadInput ||
		!strings.Contains(bad.err.String(), "replayed different traces") || !strings.Contains(bad.err.String(), "lengths") {
		t.Fatalf("merging shards of two traces: exit %d, stderr %s", code, bad.err.String())
	}
}

// TestLateShardDoesNotStart: `run --shard --start-at` a minute in the past exits 4 without
// sending (the engine sees no request) and says why; --start-grace longer than that lets it
// start.
func TestLateShardDoesNotStart(t *testing.T) {
	dir := t.TempDir()
	trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "l", n: 10, spacing: time.Millisecond, in: 8, out: 2})
	url, eng := engineLoopback(t)
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	app := newTestApp(nil)
	code := app.cli("run", "--trace", trace, "--endpoint", url, "--no-progress", "--shard", "0/2", "--start-at", past, "-o", filepath.Join(dir, "late"))
	if code != exitLateStart || !strings.Contains(app.err.String(), "did not start") || !strings.Contains(app.err.String(), "--start-grace 10s") {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitLateStart, app.err.String())
	}
	for _, id := range ids {
		if _, sent := eng.Timeline(id); sent {
			t.Fatalf("a late shard sent request %s", id)
		}
	}
	mustRun(t, newTestApp(nil), "run", "--trace", trace, "--endpoint", url, "--no-progress", "--shard", "0/2", "--start-at", past,
		"--start-grace", "10m", "-o", filepath.Join(dir, "graced"))
}
