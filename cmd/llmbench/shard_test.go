package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
)

// serveLoopback runs `llmbench serve` in-process on a loopback port for the test's lifetime
// and returns its base URL.
func serveLoopback(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	app := newTestApp(nil)
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, &app.App, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...))
	}()
	t.Cleanup(func() { cancel(); <-done })
	re := regexp.MustCompile(`listening on (http://\S+)`)
	var url string
	waitFor(t, 30*time.Second, "llmbench serve to listen", func() bool {
		if m := re.FindStringSubmatch(app.out.String()); m != nil {
			url = m[1]
		}
		return url != ""
	})
	return url
}

// engineLoopback serves a reference engine configured as `llmbench serve` configures it by
// default, with the clock reference of sharded runs, on a loopback port for the test's
// lifetime. The test keeps the engine, to read its ground truth.
func engineLoopback(t *testing.T) (string, *refengine.Engine) {
	t.Helper()
	cfg, err := addEngineFlags(pflag.NewFlagSet("serve", pflag.ContinueOnError)).config()
	if err != nil {
		t.Fatal(err)
	}
	eng, err := refengine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: runner.WithClock(eng.Handler(), nil)}
	served := make(chan struct{})
	go func() { srv.Serve(ln); close(served) }()
	t.Cleanup(func() { srv.Close(); <-served; eng.Close() })
	return "http://" + ln.Addr().String(), eng
}

// shardProc is one `llmbench run --shard` child process (this test binary, see
// TestReliabilityCLIChild).
type shardProc struct {
	cmd    *exec.Cmd
	exited chan error
	out    *syncBuffer
	dir    string
}

func (p *shardProc) wait() error {
	err := <-p.exited
	p.exited <- err
	return err
}

// startShards starts n shard processes of trace against url with a common start 2 s from
// now, each writing dir/shard-I.
func startShards(t *testing.T, dir, trace, url string, n int) ([]*shardProc, time.Time) {
	t.Helper()
	at := time.Now().Add(2 * time.Second).Round(0)
	start := at.UTC().Format(time.RFC3339Nano)
	var procs []*shardProc
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		a, _ := json.Marshal([]string{"run", "--trace", trace, "--endpoint", url, "--tokenizer", "reference", "--no-progress",
			"--shard", fmt.Sprintf("%d/%d", i, n), "--start-at", start, "-o", d})
		cmd := exec.Command(os.Args[0], "-test.run=^TestReliabilityCLIChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LLMBENCH_CLI_CHILD=1", "LLMBENCH_CLI_ARGS="+string(a))
		p := &shardProc{cmd: cmd, exited: make(chan error, 1), out: &syncBuffer{}, dir: d}
		cmd.Stdout, cmd.Stderr = p.out, p.out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.exited <- cmd.Wait() }()
		t.Cleanup(func() { cmd.Process.Kill(); p.wait() })
		procs = append(procs, p)
	}
	return procs, at
}

func readMerged(t *testing.T, dir string) *metrics.Summary {
	t.Helper()
	s, err := runner.ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Run.Merged == nil {
		t.Fatalf("%s: summary.json has no run.merged", dir)
	}
	return s
}

// recordIDs counts the records of each request id in a requests.msgpack.
func recordIDs(t *testing.T, path string) map[string]int {
	t.Helper()
	ids := map[string]int{}
	if err := metrics.EachRecord(path, func(r *metrics.Record) error { ids[r.ID]++; return nil }); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestShardedRunMergesLikeOneRun is the acceptance test: three shard processes of
// `llmbench run` against one reference engine on loopback, with a common start, merge into
// a result in which every trace request appears exactly once, the token totals equal a
// single-process run's, the histograms equal those of the union of the shards' records bit
// for bit (and the HdrHistogram merge of the shards' own), every merged record sits where the
// engine saw its request (the rebasing onto the common epoch), and the TTFT and TPOT
// percentiles are the engine's ground truth for those requests, as the single run's are for
// its own (see checkAgainstEngine).
func TestShardedRunMergesLikeOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes and replays a trace four times")
	}
	quietMachine(t)
	dir := t.TempDir()
	// 240 requests over 2.4 s; 32 output tokens each at about 7 ms per token on the engine.
	trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "q", n: 240, spacing: 10 * time.Millisecond, in: 128, out: 32})

	// Each replay gets an engine of its own, so that both meet a cold prefix cache.
	url, eng := engineLoopback(t)
	single := filepath.Join(dir, "single")
	mustRun(t, newTestApp(nil), "run", "--trace", trace, "--endpoint", url, "--tokenizer", "reference", "--no-progress", "-o", single)
	one, err := runner.ReadSummary(single)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstEngine(t, "single run", single, eng, time.Time{}, 0)

	url, eng = engineLoopback(t)
	procs, start := startShards(t, dir, trace, url, 3)
	var dirs []string
	for i, p := range procs {
		if err := p.wait(); err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, p.out.String())
		}
		dirs = append(dirs, p.dir)
	}
	merged := filepath.Join(dir, "merged")
	app := newTestApp(nil)
	mustRun(t, app, append([]string{"merge", "-o", merged}, dirs...)...)
	if !strings.Contains(app.out.String(), "merged 3 of 3 shards") {
		t.Fatalf("merge output:\n%s", app.out.String())
	}
	sum := readMerged(t, merged)
	m := sum.Run.Merged
	if m.Shards != 3 || len(m.Merged) != 3 || len(m.Missing)+len(m.Partial) != 0 || m.Dropped != 0 {
		t.Fatalf("run.merged %+v", m)
	}
	if m.WorstBoundNs <= 0 || time.Duration(m.WorstBoundNs) > 5*time.Millisecond {
		t.Fatalf("clock bound %d ns on loopback", m.WorstBoundNs)
	}

	// Every trace request exactly once.
	got := recordIDs(t, filepath.Join(merged, runner.RecordsFile))
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("request %s appears %d times in the merged records", id, got[id])
		}
	}
	if len(got) != len(ids) {
		t.Errorf("%d distinct ids merged, the trace has %d", len(got), len(ids))
	}
	// Token totals: the single run's.
	if sum.Requests.Succeeded != len(ids) || one.Requests.Succeeded != len(ids) {
		t.Fatalf("succeeded: merged %d, single %d, of %d", sum.Requests.Succeeded, one.Requests.Succeeded, len(ids))
	}
	if sum.Requests.InputTokens != one.Requests.InputTokens || sum.Requests.OutputTokens != one.Requests.OutputTokens {
		t.Errorf("tokens: merged %d in / %d out, single run %d / %d", sum.Requests.InputTokens, sum.Requests.OutputTokens, one.Requests.InputTokens, one.Requests.OutputTokens)
	}
	// Histograms: one summary over the union of the shards' records, and the HdrHistogram
	// merge of the shards' summaries, both equal the merged result's bit for bit.
	var srcs []metrics.Source
	var parts []*metrics.Summary
	for _, d := range dirs {
		srcs = append(srcs, metrics.FileSource(filepath.Join(d, runner.RecordsFile)))
		s, err := runner.ReadSummary(d)
		if err != nil {
			t.Fatal(err)
		}
		if s.Run.Shard == nil || s.Run.Shard.Clock.Method != "round-trip" || s.Run.Shard.TraceFingerprint == "" {
			t.Fatalf("%s: run.shard %+v", d, s.Run.Shard)
		}
		parts = append(parts, s)
	}
	union, err := metrics.Summarize(metrics.MultiSource(srcs...), metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := metrics.HistogramDiff(union, sum); d != nil {
		t.Errorf("merged histograms differ from the union of the records': %v", d)
	}
	hm, err := metrics.MergeSummaries(metrics.MergeShards, parts...)
	if err != nil {
		t.Fatal(err)
	}
	// Fluidity deadlines derived from each shard's own medians (no --slo) differ between
	// shards, so only with equal deadlines do the shards' fluidity histograms merge exactly.
	sameDeadlines := true
	for _, p := range parts[1:] {
		sameDeadlines = sameDeadlines && p.Fluidity.TTFTDeadlineMs == parts[0].Fluidity.TTFTDeadlineMs && p.Fluidity.TBTDeadlineMs == parts[0].Fluidity.TBTDeadlineMs
	}
	for _, d := range metrics.HistogramDiff(hm, sum) {
		if !sameDeadlines && strings.HasPrefix(d, "fluidity:") {
			continue
		}
		t.Errorf("merged histograms differ from the HdrHistogram merge of the shards': %v", d)
	}
	if strings.Contains(strings.Join(sum.Warnings, "\n"), "merge check") {
		t.Errorf("merge warned about its own cross-check: %v", sum.Warnings)
	}
	// Percentiles against the engine's ground truth of the same requests (a comparison with
	// the single run's percentiles would hold two replays to each other: on a loaded machine
	// their arrivals, and so the engine's batches, differ, which says nothing of the merge).
	checkAgainstEngine(t, "merged", merged, eng, start, time.Duration(m.WorstBoundNs))
	t.Logf("TTFT p50/p90 merged %.2f/%.2f single %.2f/%.2f ms; TPOT p50/p90 merged %.3f/%.3f single %.3f/%.3f ms; clock bound %d ns",
		sum.Latency.TTFT.P50, sum.Latency.TTFT.P90, one.Latency.TTFT.P50, one.Latency.TTFT.P90,
		sum.Latency.TPOT.P50, sum.Latency.TPOT.P90, one.Latency.TPOT.P50, one.Latency.TPOT.P90, m.WorstBoundNs)
	for _, p := range parts {
		t.Logf("shard %d: schedule lag P99 %.2f ms, max %.2f ms; clock offset %d ns ± %d; warnings %q", p.Run.Shard.Index, p.Client.LagMs.P99, p.Client.LagMs.Max,
			p.Run.Shard.Clock.OffsetNs, p.Run.Shard.Clock.BoundNs, p.Warnings)
	}

	// Refusal: shard 0 twice exits 2 and writes nothing.
	bad := filepath.Join(dir, "bad")
	if code := newTestApp(nil).cli("merge", "-o", bad, dirs[0], dirs[0], dirs[1]); code != 2 {
		t.Fatalf("merging shard 0 twice: exit %d, want 2", code)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Fatal("a refused merge wrote its output directory")
	}
}

// TestShardedRunKilledShardIsNamed: a shard killed (SIGKILL) mid-run leaves a merged result
// that names it as partial and counts its requests without a record as dropped, with every
// trace request still accounted for exactly once.
func TestShardedRunKilledShardIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := t.TempDir()
	url := serveLoopback(t)
	// 600 requests over 6 s: shard 1 is killed after its fifth record, long before its end.
	trace, ids := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "k", n: 600, spacing: 10 * time.Millisecond, in: 64, out: 16})
	procs, _ := startShards(t, dir, trace, url, 3)
	victim := procs[1]
	waitFor(t, 60*time.Second, "5 records from shard 1", func() bool {
		return recordsSoFar(filepath.Join(victim.dir, runner.RecordsFile)) >= 5
	})
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for i, p := range procs {
		err := p.wait()
		if i != 1 && err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, p.out.String())
		}
		dirs = append(dirs, p.dir)
	}
	kept := recordsSoFar(filepath.Join(victim.dir, runner.RecordsFile))
	f, err := runner.ReadShardFacts(victim.dir)
	if err != nil {
		t.Fatal(err)
	}
	if kept >= f.Requests {
		t.Fatalf("shard 1 finished all %d requests before the kill; the test proves nothing", f.Requests)
	}
	merged := filepath.Join(dir, "merged")
	app := newTestApp(nil)
	mustRun(t, app, append([]string{"merge", "-o", merged}, dirs...)...)
	sum := readMerged(t, merged)
	m := sum.Run.Merged
	if fmt.Sprint(m.Partial) != "[1]" || len(m.Missing) != 0 || m.Dropped != f.Requests-kept {
		t.Fatalf("run.merged %+v: want partial [1] and %d dropped (%d of %d kept)", m, f.Requests-kept, kept, f.Requests)
	}
	if sum.Requests.Total != len(ids) || sum.Requests.Dropped < m.Dropped || !sum.Run.Interrupted {
		t.Fatalf("requests %+v, interrupted %v", sum.Requests, sum.Run.Interrupted)
	}
	if !strings.Contains(strings.Join(sum.Warnings, "\n"), "shard 1/3") || !strings.Contains(app.out.String(), "partial [1]") {
		t.Fatalf("the partial shard is not named:\n%s\n%s", strings.Join(sum.Warnings, "\n"), app.out.String())
	}
	got := recordIDs(t, filepath.Join(merged, runner.RecordsFile))
	for _, id := range ids {
		if got[id] != 1 {
			t.Fatalf("request %s appears %d times in the merged records", id, got[id])
		}
	}
}

// checkAgainstEngine holds the records of a results directory to the ground truth of the
// engine that served them. For every request, the client's time from writing the request to
// reading its first token is the engine's TTFT (from admitting the request to emitting its
// first token) plus delivery and loopback transit, never less; the client's TTFT (from the
// intended send time) is its own wait before sending plus the engine's TTFT; its TPOT is the
// pace of the engine's emissions. With a non-zero epoch (the merged result: records on the common epoch), each
// record's send time, placed on the wall clock, is when the engine saw the request arrive,
// within the clock bound: this is what the rebasing onto the epoch has to get right.
func checkAgainstEngine(t *testing.T, name, dir string, eng *refengine.Engine, epoch time.Time, bound time.Duration) {
	t.Helper()
	const (
		early = 500 * time.Microsecond // a send time taken after the write returned
		slack = 3 * time.Millisecond   // loopback transit to the engine, at the 90th percentile
	)
	var excess, transit, ttft, ttftTrue, tpot, tpotTrue []float64
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	err := metrics.EachRecord(filepath.Join(dir, runner.RecordsFile), func(r *metrics.Record) error {
		tl, ok := eng.Timeline(r.ID)
		if !ok || len(tl.Emissions) == 0 || !r.OK() {
			return fmt.Errorf("%s: request %s: no ground truth (%v) or failed (%s)", name, r.ID, ok, r.Failure)
		}
		server := int64(tl.TTFT())
		client := r.FirstToken - r.Sent
		if client < server-int64(early) {
			t.Errorf("%s: request %s: first token %.3f ms after the send, the engine took %.3f ms", name, r.ID, ms(client), ms(server))
		}
		excess = append(excess, ms(client-server))
		ttft = append(ttft, ms(r.FirstToken-r.Intended))
		ttftTrue = append(ttftTrue, ms(r.Sent-r.Intended+server))
		if e := tl.Emissions; r.OutputTokens > 1 && tl.OutputTokens > 1 {
			tpot = append(tpot, ms((r.End-r.FirstToken)/int64(r.OutputTokens-1)))
			tpotTrue = append(tpotTrue, ms(int64(e[len(e)-1].At-e[0].At)/int64(tl.OutputTokens-1)))
		}
		if !epoch.IsZero() {
			d := tl.Wall(tl.Arrival).Sub(epoch.Add(time.Duration(r.Sent)))
			if d < -(bound + early) {
				t.Errorf("%s: request %s: sent at %s on the common epoch (intended %s, dispatched %s), the engine saw it %.3f ms earlier (clock bound %s)",
					name, r.ID, time.Duration(r.Sent), time.Duration(r.Intended), time.Duration(r.Dispatched), -ms(int64(d)), bound)
			}
			transit = append(transit, ms(int64(d)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	q := func(v []float64, p float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[min(len(s)-1, int(p*float64(len(s))))]
	}
	if len(transit) > 0 {
		if d := q(transit, 0.9); math.Abs(d) > ms(int64(slack+bound)) {
			t.Errorf("%s: the engine saw requests %.3f ms after their send time on the common epoch, at the 90th percentile (bound %s)", name, d, slack+bound)
		}
	}
	// The engine paces its emissions on timers (a chunk leaves up to a timer's granularity
	// after its emission) and the client reads on a shared machine: bound max(5 ms, 35%).
	agree := func(what string, got, want []float64) {
		for _, p := range []float64{0.5, 0.9} {
			if g, w := q(got, p), q(want, p); math.Abs(g-w) > math.Max(5, 0.35*w) {
				t.Errorf("%s: %s p%.0f %.3f ms, the engine's %.3f ms (bound max(5 ms, 35%%))", name, what, 100*p, g, w)
			}
		}
	}
	agree("TTFT", ttft, ttftTrue)
	agree("TPOT", tpot, tpotTrue)
	t.Logf("%s: %d requests; first token read after its emission p50/p90/max %.3f/%.3f/%.3f ms; TTFT p50/p90 %.2f/%.2f ms (engine %.2f/%.2f); TPOT p50/p90 %.3f/%.3f ms (engine %.3f/%.3f)",
		name, len(excess), q(excess, 0.5), q(excess, 0.9), q(excess, 1), q(ttft, 0.5), q(ttft, 0.9), q(ttftTrue, 0.5), q(ttftTrue, 0.9), q(tpot, 0.5), q(tpot, 0.9), q(tpotTrue, 0.5), q(tpotTrue, 0.9))
	if len(transit) > 0 {
		t.Logf("%s: the engine saw a request after its send time on the common epoch by p50/p90 %.3f/%.3f ms, min %.3f ms", name, q(transit, 0.5), q(transit, 0.9), q(transit, 0))
	}
}
