package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
)

// soakSample is one reading of the process during the soak.
type soakSample struct {
	at         time.Duration
	goroutines int
	heap       uint64 // HeapAlloc after a full GC
}

func readProcess(start time.Time) soakSample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return soakSample{at: time.Since(start), goroutines: runtime.NumGoroutine(), heap: ms.HeapAlloc}
}

// window returns the median goroutine count and heap of the samples taken between the
// fractions lo and hi of the run's length.
func window(samples []soakSample, total time.Duration, lo, hi float64) (g int, heap uint64, n int) {
	var gs []int
	var hs []uint64
	for _, s := range samples {
		f := float64(s.at) / float64(total)
		if f >= lo && f <= hi {
			gs = append(gs, s.goroutines)
			hs = append(hs, s.heap)
		}
	}
	if len(gs) == 0 {
		return 0, 0, 0
	}
	slices.Sort(gs)
	slices.Sort(hs)
	return gs[len(gs)/2], hs[len(hs)/2], len(gs)
}

// TestReliabilitySoak replays a trace for about 12 s of wall time (60 s of trace time at
// --time-scale 5) against the embedded engine with a mix of faults, samples goroutines and
// heap along the way, and checks that both stay flat and that the goroutines return to the
// baseline after the run. It runs closed-loop (--concurrency 4, --duration): the number of
// requests in flight is then fixed, so goroutine and heap counts do not swing with how busy
// the (shared) machine is, and growth can only come from leaks.
func TestReliabilitySoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test (about 12 s)")
	}
	const (
		scale    = 5
		duration = 60 * time.Second // of trace time: 12 s of wall time
		n        = 5000             // more than the run can send in that time
	)
	wall := duration / scale
	dir := t.TempDir()
	trace, ids := writeTrace(t, dir, "soak.jsonl", traceSpec{prefix: "soak", n: n, spacing: 10 * time.Millisecond, in: 128, out: 48})
	out := filepath.Join(dir, "out")
	faults := "reset-before=0.03,reset-mid=0.05,stall=0.05:1s,status-429=0.03,status-503=0.05,malformed=0.03,bad-json=0.03,no-done=0.03,seed=5"
	app := newTestApp(nil)

	base := readProcess(time.Now())
	start := time.Now()
	done := make(chan int, 1)
	go func() {
		done <- app.cli("run", "--trace", trace, "--out", out, "--time-scale", fmt.Sprint(scale), "--no-progress",
			"--concurrency", "4", "--duration", duration.String(), "--faults", faults)
	}()
	var samples []soakSample
	tick := time.NewTicker(wall / 40)
	defer tick.Stop()
	code := -1
	for code < 0 {
		select {
		case code = <-done:
		case <-tick.C:
			samples = append(samples, readProcess(start))
		}
	}
	total := time.Since(start)
	if code != 0 {
		t.Fatalf("soak run: exit %d\n%s", code, app.err.String())
	}
	// Closed loop with --duration: the requests not reached are left out (no record); every
	// request sent has exactly one.
	recs, err := metrics.ReadRecords(filepath.Join(out, "requests.msgpack"))
	if err != nil {
		t.Fatal(err)
	}
	inTrace := map[string]bool{}
	for _, id := range ids {
		inTrace[id] = true
	}
	sent := make([]string, 0, len(recs))
	for _, r := range recs {
		if !inTrace[r.ID] {
			t.Fatalf("record %q is not a trace request", r.ID)
		}
		sent = append(sent, r.ID)
	}
	_, s := checkRunInvariants(t, out, sent)
	if s.Requests.Failed == 0 || s.Requests.Succeeded < 100 {
		t.Errorf("soak: %d succeeded, failures %v; want both, and at least 100 successes", s.Requests.Succeeded, s.Requests.Failures)
	}

	g1, h1, n1 := window(samples, total, 0.15, 0.40)
	g2, h2, n2 := window(samples, total, 0.60, 0.90)
	t.Logf("soak: %d requests in %s (planned %s); baseline %d goroutines, %.1f MiB heap; early %d goroutines %.1f MiB (%d samples); late %d goroutines %.1f MiB (%d samples); failures %v",
		len(recs), total.Round(time.Millisecond), wall, base.goroutines, mib(base.heap), g1, mib(h1), n1, g2, mib(h2), n2, s.Requests.Failures)
	if n1 < 3 || n2 < 3 {
		t.Fatalf("too few samples (%d early, %d late) to judge", n1, n2)
	}
	// Four requests are in flight throughout, so goroutines and heap must not grow with the
	// number of requests done.
	if g2 > g1+20 {
		t.Errorf("goroutines grew during the soak: %d early, %d late", g1, g2)
	}
	if h2 > h1+h1/2+16<<20 {
		t.Errorf("heap grew during the soak: %.1f MiB early, %.1f MiB late", mib(h1), mib(h2))
	}
	for _, smp := range samples {
		if smp.goroutines > base.goroutines+200 {
			t.Errorf("%d goroutines at %s (baseline %d)", smp.goroutines, smp.at, base.goroutines)
			break
		}
	}

	// After the run every goroutine it started is gone (idle connections and timers may take
	// a moment to wind down: poll, bounded).
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base.goroutines+5 {
		if time.Now().After(deadline) {
			var b bytes.Buffer
			pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Fatalf("%d goroutines 10 s after the soak, baseline %d:\n%s", runtime.NumGoroutine(), base.goroutines, clipLines(b.String(), 80))
		}
		time.Sleep(20 * time.Millisecond)
	}
	end := readProcess(start)
	if end.heap > base.heap+16<<20 {
		t.Errorf("heap after the soak %.1f MiB, before %.1f MiB", mib(end.heap), mib(base.heap))
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func clipLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("… %d more lines", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}
