package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/racebuild"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

var mergeT0 = time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)

// synthRecord is request q's record: a success with ten one-token chunks whose timing
// varies with i, intended at q's arrival.
func synthRecord(q *traces.Request, i int) metrics.Record {
	in := int64(q.Arrival)
	first := in + int64(2*time.Millisecond) + int64(i%97)*int64(time.Microsecond)*37
	r := metrics.Record{ID: q.ID, Class: q.Class, Session: q.Session, Turn: q.Turn, Intended: in, Dispatched: in + 5000, Sent: in + 5000,
		Headers: in + int64(time.Millisecond), FirstToken: first, InputTokens: q.InputTokens, OutputTokens: 10, TokenSource: metrics.TokensFromUsage,
		RequestedTokens: q.OutputTokens, ServerInputTokens: q.InputTokens, ServerOutputTokens: 10, Status: 200}
	t := first
	for k := range 10 {
		if k > 0 {
			t += int64(time.Millisecond) + int64((i*7+k)%13)*int64(50*time.Microsecond)
		}
		r.Chunks = append(r.Chunks, metrics.Chunk{T: t, Tokens: 1})
	}
	r.End = t + 1000
	return r
}

type synthShard struct {
	index    int
	keep     int           // records written (-1: all)
	finished bool          // write summary.json
	epoch    time.Duration // the shard's epoch after mergeT0, on its own clock
	offset   time.Duration // its clock offset
	mutate   func(*ShardFacts)
}

// writeShards writes a trace of n requests and the results directories of the given shards
// of it; it returns the trace path, the directories and every record written (times on the
// shard's own epoch).
func writeShards(t *testing.T, n, count int, shards []synthShard) (string, []string, []metrics.Record) {
	t.Helper()
	reqs := shardTrace(n)
	for i := range reqs {
		reqs[i].Session, reqs[i].Turn = "", 0
		reqs[i].Arrival = time.Duration(i) * 30 * time.Second / time.Duration(n) // 30 s, whatever n
		reqs[i].Class = []string{"chat", "code"}[i%2]
	}
	return writeShardsOf(t, reqs, count, shards, func(i int) metrics.Record { return synthRecord(&reqs[i], i) })
}

// writeShardsOf writes the trace reqs and the results directories of the given shards of it,
// with record(i) as request i's record.
func writeShardsOf(t *testing.T, reqs []traces.Request, count int, shards []synthShard, record func(i int) metrics.Record) (string, []string, []metrics.Record) {
	t.Helper()
	dir := t.TempDir()
	n := len(reqs)
	tracePath := filepath.Join(dir, "trace.jsonl")
	if err := traces.WriteFile(tracePath, reqs); err != nil {
		t.Fatal(err)
	}
	src, err := traces.OpenFile(tracePath, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanShards(src, count)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	var all []metrics.Record
	for _, s := range shards {
		d := filepath.Join(dir, fmt.Sprintf("shard-%d", s.index))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		f := &ShardFacts{Schema: ShardSchema,
			ShardInfo: metrics.ShardInfo{Index: s.index, Count: count, TraceFingerprint: plan.Fingerprint.Digest, Requests: plan.PerShard[s.index],
				Epoch: mergeT0.Add(s.epoch).Format(time.RFC3339Nano), Clock: metrics.Clock{Method: "round-trip", OffsetNs: int64(s.offset), BoundNs: 20000}},
			Trace: tracePath, TraceRequests: n, PerShard: plan.PerShard, WholeTrace: plan.Fingerprint, Repeat: 1, RateScale: 1,
			PeriodNs: int64(metrics.ReplayLength(plan.Whole.First, plan.Whole.Last, n)), Config: map[string]string{"endpoint": "http://x"},
		}
		f.RunEndNs = f.PeriodNs
		if s.mutate != nil {
			s.mutate(f)
		}
		if err := WriteJSON(filepath.Join(d, ShardFile), f); err != nil {
			t.Fatal(err)
		}
		w, err := metrics.CreateRecordFile(filepath.Join(d, RecordsFile))
		if err != nil {
			t.Fatal(err)
		}
		written := 0
		for i := range reqs {
			if ShardOf(&reqs[i], count) != s.index || (s.keep >= 0 && written >= s.keep) {
				continue
			}
			r := record(i)
			if err := w.Write(&r); err != nil {
				t.Fatal(err)
			}
			all = append(all, r)
			written++
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if s.finished {
			sum, err := metrics.Summarize(metrics.FileSource(filepath.Join(d, RecordsFile)), metrics.Options{})
			if err != nil {
				t.Fatal(err)
			}
			sum.Run.Shard = &f.ShardInfo
			if err := WriteJSON(filepath.Join(d, SummaryFile), sum); err != nil {
				t.Fatal(err)
			}
		}
		dirs = append(dirs, d)
	}
	return tracePath, dirs, all
}

// TestMergeIsExact: three finished shards merge into every record once, rebased onto the
// common epoch, with histograms equal bit for bit to one summary of all the records and to
// the HdrHistogram merge of the shards' own.
func TestMergeIsExact(t *testing.T) {
	_, dirs, all := writeShards(t, 600, 3, []synthShard{
		{index: 2, keep: -1, finished: true, epoch: 0},
		{index: 0, keep: -1, finished: true, epoch: 2 * time.Second, offset: -500 * time.Millisecond},
		{index: 1, keep: -1, finished: true, epoch: time.Second},
	})
	out := filepath.Join(t.TempDir(), "merged")
	res, err := Merge(MergeOptions{Dirs: dirs, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	sum := res.Summary
	m := sum.Run.Merged
	if m == nil || m.Shards != 3 || len(m.Merged) != 3 || len(m.Missing)+len(m.Partial) != 0 || m.Dropped != 0 || sum.Run.Interrupted {
		t.Fatalf("merge facts %+v", m)
	}
	if m.WorstOffsetNs != int64(500*time.Millisecond) || m.WorstBoundNs != 20000 {
		t.Fatalf("worst clock %d ± %d", m.WorstOffsetNs, m.WorstBoundNs)
	}
	if sum.Requests.Total != 600 || sum.Requests.Succeeded != 600 || res.Records != 600 {
		t.Fatalf("requests %+v", sum.Requests)
	}
	union, err := metrics.Summarize(metrics.SliceSource(all), metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := metrics.HistogramDiff(union, sum); d != nil {
		t.Fatalf("merged histograms differ from the union's: %v", d)
	}
	if !reflect.DeepEqual(sum.Latency.TTFT, union.Latency.TTFT) || !reflect.DeepEqual(sum.Latency.TPOT, union.Latency.TPOT) {
		t.Fatalf("TTFT %+v vs %+v", sum.Latency.TTFT, union.Latency.TTFT)
	}
	for _, w := range sum.Warnings {
		if strings.Contains(w, "merge check") {
			t.Fatal(w)
		}
	}
	// Shard 0's epoch is 2 s later on a clock 0.5 s behind: 1.5 s after the common epoch
	// (shard 2's, the earliest).
	recs, err := metrics.ReadRecords(filepath.Join(out, RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	orig := map[string]metrics.Record{}
	for _, r := range all {
		orig[r.ID] = r
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.ID] {
			t.Fatalf("%s twice", r.ID)
		}
		seen[r.ID] = true
		o := orig[r.ID]
		want := map[int]int64{0: int64(1500 * time.Millisecond), 1: int64(time.Second), 2: 0}[ShardOf(&traces.Request{ID: r.ID}, 3)]
		if r.Intended-o.Intended != want || r.End-o.End != want || r.Chunks[3].T-o.Chunks[3].T != want {
			t.Fatalf("%s shifted by %d, want %d", r.ID, r.Intended-o.Intended, want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, ReportFile)); err != nil {
		t.Fatal(err)
	}
}

// TestMergeAccountsForMissingAndPartialShards: a killed shard's records count and the rest
// of its requests are dropped; a missing shard's requests are all dropped; both are named.
func TestMergeAccountsForMissingAndPartialShards(t *testing.T) {
	trace, dirs, all := writeShards(t, 300, 3, []synthShard{
		{index: 0, keep: -1, finished: true},
		{index: 1, keep: 40, finished: false},
	})
	src, _ := traces.OpenFile(trace, traces.ReadOptions{})
	plan, _ := PlanShards(src, 3)
	out := filepath.Join(t.TempDir(), "merged")
	gone := filepath.Join(filepath.Dir(dirs[0]), "shard-2") // never ran: no directory
	res, err := Merge(MergeOptions{Dirs: append(dirs, gone), OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Summary.Run.Merged
	wantDropped := plan.PerShard[1] - 40 + plan.PerShard[2]
	if fmt.Sprint(m.Missing) != "[2]" || fmt.Sprint(m.Partial) != "[1]" || m.Dropped != wantDropped {
		t.Fatalf("merge facts %+v, want missing [2], partial [1], %d dropped", m, wantDropped)
	}
	rq := res.Summary.Requests
	if rq.Total != 300 || rq.Dropped != wantDropped || rq.Succeeded != len(all) {
		t.Fatalf("requests %+v (want 300, %d dropped, %d succeeded)", rq, wantDropped, len(all))
	}
	text := strings.Join(res.Summary.Warnings, "\n")
	if !strings.Contains(text, "shard 2/3 is missing") || !strings.Contains(text, gone+" does not exist") || !strings.Contains(text, "shard 1/3") || !res.Summary.Run.Interrupted {
		t.Fatalf("warnings do not name the shards:\n%s", text)
	}
	ids := map[string]bool{}
	if err := metrics.EachRecord(filepath.Join(out, RecordsFile), func(r *metrics.Record) error {
		if ids[r.ID] {
			return fmt.Errorf("%s twice", r.ID)
		}
		ids[r.ID] = true
		return nil
	}); err != nil || len(ids) != 300 {
		t.Fatalf("%d distinct records, %v", len(ids), err)
	}
	// Without the trace the dropped requests cannot be named: refused.
	os.Rename(trace, trace+".gone")
	if _, err := Merge(MergeOptions{Dirs: dirs, OutDir: filepath.Join(t.TempDir(), "m2")}); !isRefused(err) || !strings.Contains(err.Error(), "--trace") {
		t.Fatalf("err = %v", err)
	}
}

func isRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

func TestMergeRefusesShardsOfDifferentRuns(t *testing.T) {
	for name, c := range map[string]struct {
		shards []synthShard
		want   string
	}{
		"overlap": {[]synthShard{{index: 0, keep: -1, finished: true}, {index: 0, keep: -1, finished: true}}, "both shard 0/2"},
		"trace": {[]synthShard{{index: 0, keep: -1, finished: true}, {index: 1, keep: -1, finished: true, mutate: func(f *ShardFacts) {
			other := *f.WholeTrace
			other.Lengths, other.Digest = "00", "sha256:00"
			f.TraceFingerprint, f.WholeTrace = other.Digest, &other
		}}}, "different traces (100 requests, digest"},
		"trace, older shard": {[]synthShard{{index: 0, keep: -1, finished: true}, {index: 1, keep: -1, finished: true, mutate: func(f *ShardFacts) {
			f.TraceFingerprint, f.WholeTrace = "sha256:00", nil
		}}}, "different traces (fingerprints"},
		"config":  {[]synthShard{{index: 0, keep: -1, finished: true}, {index: 1, keep: -1, finished: true, mutate: func(f *ShardFacts) { f.Config["endpoint"] = "http://y" }}}, `endpoint "http://x" and "http://y"`},
		"metrics": {[]synthShard{{index: 0, keep: -1, finished: true}, {index: 1, keep: -1, finished: true, mutate: func(f *ShardFacts) { f.Metrics.SLO.TTFT = time.Second }}}, "metric options"},
		"start":   {[]synthShard{{index: 0, keep: -1, finished: true}, {index: 1, keep: -1, finished: true, mutate: func(f *ShardFacts) { f.StartAt = "2026-12-01T15:00:00Z" }}}, "share --start-at"},
	} {
		t.Run(name, func(t *testing.T) {
			_, dirs, _ := writeShards(t, 100, 2, c.shards)
			out := filepath.Join(t.TempDir(), "merged")
			_, err := Merge(MergeOptions{Dirs: dirs, OutDir: out})
			if !isRefused(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a refusal naming %q", err, c.want)
			}
			if _, serr := os.Stat(out); !os.IsNotExist(serr) {
				t.Fatal("a refused merge wrote its output directory")
			}
		})
	}
	if _, err := Merge(MergeOptions{Dirs: []string{t.TempDir()}}); !isRefused(err) || !strings.Contains(err.Error(), ShardFile) {
		t.Fatalf("a directory without shard.json: %v", err)
	}
}

// TestMergeMemoryFlatChild is not a test: TestMergeMemoryFlat runs this test binary with
// LLMBENCH_MERGE_CHILD set to the output directory and the shard directories (JSON), and
// this function merges them in a fresh process and prints its peak RSS (Linux VmHWM).
func TestMergeMemoryFlatChild(t *testing.T) {
	v := os.Getenv("LLMBENCH_MERGE_CHILD")
	if v == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(v), &args); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(MergeOptions{Dirs: args[1:], OutDir: args[0]}); err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			fmt.Printf("peak-rss-kib %s\n", strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
}

// TestMergeMemoryFlat: merging ten times the records does not take ten times the memory
// (records are streamed, never held). Peak RSS of a fresh process each (its own VmHWM: the
// rusage of a child counts the parent's pages from before exec): 3 shards of 1,000 and of
// 10,000 records (≈ 1 KB each in memory, so holding 30,000 would add ≈ 30 MB).
func TestMergeMemoryFlat(t *testing.T) {
	racebuild.Heavy(t)
	if testing.Short() {
		t.Skip("starts child processes")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs Linux /proc for the peak RSS")
	}
	peak := func(n int) int64 {
		_, dirs, _ := writeShards(t, n, 3, []synthShard{{index: 0, keep: -1, finished: true}, {index: 1, keep: -1, finished: true}, {index: 2, keep: -1, finished: true}})
		args, _ := json.Marshal(append([]string{filepath.Join(t.TempDir(), "m")}, dirs...))
		cmd := exec.Command(os.Args[0], "-test.run=^TestMergeMemoryFlatChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LLMBENCH_MERGE_CHILD="+string(args), "GOGC=100")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		_, v, ok := strings.Cut(string(out), "peak-rss-kib ")
		kib, perr := strconv.ParseInt(strings.Fields(v + " x")[0], 10, 64)
		if !ok || perr != nil {
			t.Fatalf("child printed no peak RSS:\n%s", out)
		}
		return kib
	}
	small, large := peak(3_000), peak(30_000)
	t.Logf("peak RSS merging 3,000 records: %d KiB; 30,000: %d KiB", small, large)
	if large > small+15*1024 {
		t.Fatalf("peak RSS grew from %d to %d KiB with ten times the records: records are held in memory", small, large)
	}
}

// TestMergeFlagsClocksBeyondTheLagLimit: a shard whose clock is known only to within 8 ms
// (above the 5 ms lag limit) makes the merged run client-limited; one that measured nothing
// earns a warning.
func TestMergeFlagsClocksBeyondTheLagLimit(t *testing.T) {
	_, dirs, _ := writeShards(t, 100, 2, []synthShard{
		{index: 0, keep: -1, finished: true},
		{index: 1, keep: -1, finished: true, offset: 3 * time.Second, mutate: func(f *ShardFacts) { f.Clock.BoundNs = int64(8 * time.Millisecond) }},
	})
	res, err := Merge(MergeOptions{Dirs: dirs, OutDir: filepath.Join(t.TempDir(), "m")})
	if err != nil {
		t.Fatal(err)
	}
	c, m := res.Summary.Client, res.Summary.Run.Merged
	if !c.Limited || !strings.Contains(c.Reason, "clocks are known only to within 8 ms") || m.WorstBoundNs != int64(8*time.Millisecond) || m.WorstOffsetNs != int64(3*time.Second) {
		t.Fatalf("client %+v, merged %+v", c, m)
	}
	_, dirs, _ = writeShards(t, 100, 2, []synthShard{
		{index: 0, keep: -1, finished: true},
		{index: 1, keep: -1, finished: true, mutate: func(f *ShardFacts) { f.Clock = metrics.Clock{Method: "none", BoundNs: -1} }},
	})
	res, err = Merge(MergeOptions{Dirs: dirs, OutDir: filepath.Join(t.TempDir(), "m")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Run.Merged.WorstBoundNs != -1 || !strings.Contains(strings.Join(res.Summary.Warnings, "\n"), "clock offset was not measured") {
		t.Fatalf("merged %+v warnings %v", res.Summary.Run.Merged, res.Summary.Warnings)
	}
}

// TestMergeWholeTraceFingerprintOfOlderShards: shard.json files of an older llmbench carry
// only the trace's digest. The merged fingerprint is then computed from the trace (and equals
// FingerprintTrace's), or, when the trace cannot be read, left out with a warning: never one
// shard's subset.
func TestMergeWholeTraceFingerprintOfOlderShards(t *testing.T) {
	old := func(f *ShardFacts) { f.WholeTrace = nil }
	trace, dirs, _ := writeShards(t, 90, 2, []synthShard{{index: 0, keep: -1, finished: true, mutate: old}, {index: 1, keep: -1, finished: true, mutate: old}})
	src, err := traces.OpenFile(trace, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := FingerprintTrace(src)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Merge(MergeOptions{Dirs: dirs, OutDir: filepath.Join(t.TempDir(), "m")})
	if err != nil {
		t.Fatal(err)
	}
	if fp := res.Summary.Run.TraceFingerprint; fp == nil || *fp != *whole {
		t.Fatalf("merged fingerprint %+v, want %+v", fp, whole)
	}
	if err := os.Remove(trace); err != nil {
		t.Fatal(err)
	}
	res, err = Merge(MergeOptions{Dirs: dirs, OutDir: filepath.Join(t.TempDir(), "m")})
	if err != nil {
		t.Fatal(err)
	}
	if fp := res.Summary.Run.TraceFingerprint; fp != nil || !strings.Contains(strings.Join(res.Summary.Warnings, "\n"), "only the trace's digest") {
		t.Fatalf("without the trace: fingerprint %+v, warnings %q", fp, res.Summary.Warnings)
	}
}
