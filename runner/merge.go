package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/traces"
)

// MergeOptions configure Merge (llmbench merge).
type MergeOptions struct {
	// Dirs are the shards' results directories, in any order.
	Dirs []string
	// OutDir receives the merged results directory ("" = DefaultOutDir).
	OutDir string
	// Trace is the trace file; "" uses the path the shards recorded. It is read only when a
	// shard is missing or partial, to count its requests that have no record as dropped.
	Trace   string
	Lenient bool
	// TraceSHA256, when set, refuses a trace file (once it is read) with another digest.
	TraceSHA256 string
	// Command is recorded as the merged run's command line.
	Command string
	HTML    reports.HTMLOptions
	// Now is the wall clock (time.Now when nil).
	Now func() time.Time
}

// RefusedError is a merge refused because its inputs do not belong together (different
// traces or configurations, overlapping shard indexes) or cannot be accounted for; the CLI
// exits 2.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "merge refused: " + e.Reason }

func refuse(format string, a ...any) error { return &RefusedError{Reason: fmt.Sprintf(format, a...)} }

// mergePart is one shard's results directory.
type mergePart struct {
	dir   string
	facts *ShardFacts
	sum   *metrics.Summary // nil when the shard did not finish
	// shift moves the shard's times onto the common epoch (ns).
	shift int64
}

// Merge combines the results directories of the shards of one run into one results
// directory: the records, each shard's times rebased onto the common epoch, streamed into
// one requests.msgpack (memory stays flat however many records there are); a summary
// computed over them as for one run, so every histogram and percentile is that of all the
// records; and the report. A shard that is missing, or whose run did not finish (killed or
// interrupted), is named, and its requests without a record are recorded as dropped. Shards
// of different traces or configurations, or two directories of one shard index, are refused
// (RefusedError). See docs/distributed.md.
func Merge(o MergeOptions) (*Result, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	if len(o.Dirs) == 0 {
		return nil, errors.New("merge: no shard directories given")
	}
	parts, absent, err := readParts(o.Dirs)
	if err != nil {
		return nil, err
	}
	first := parts[0].facts
	epoch, err := commonEpoch(parts)
	if err != nil {
		return nil, err
	}
	mi := newMergeInfo(parts, epoch)

	// The trace is needed to account for a missing or partial shard; otherwise it only gives
	// the whole workload's statistics, and is skipped when it cannot be read.
	trace, terr := openMergeTrace(o, first)
	if terr != nil {
		if len(mi.Missing)+len(mi.Partial) > 0 {
			return nil, terr
		}
		trace = nil
	}
	if o.OutDir == "" {
		o.OutDir = DefaultOutDir(now()) + "-merged"
	}
	if err := os.MkdirAll(o.OutDir, dirPerm); err != nil {
		return nil, fmt.Errorf("create results directory: %w", err)
	}
	recPath := filepath.Join(o.OutDir, RecordsFile)
	count, warnings, err := writeMergedRecords(recPath, parts, absent, mi, trace)
	if err != nil {
		return nil, err
	}

	mopts, sums, durS := mergedMetricsOptions(first.Metrics, parts)
	sum, err := metrics.Summarize(metrics.FileSource(recPath), withDesignedReuse(mopts, trace, 0))
	if err != nil {
		return nil, fmt.Errorf("summarize: %w", err)
	}
	if len(sums) == len(parts) && len(mi.Missing) == 0 {
		warnings = append(warnings, crossCheckShards(sums, sum)...)
	}
	sum.Run = mergedRunInfo(parts, o.Command, epoch, durS, mi)
	fp, fpWarning := wholeTraceFingerprint(first, trace)
	sum.Run.TraceFingerprint = fp
	if fpWarning != "" {
		warnings = append(warnings, fpWarning)
	}
	if trace != nil {
		sum.Workload = workloadOf(trace.Stats(), sum.Run)
	} else if len(sums) > 0 {
		sum.Workload = sums[0].Workload
		warnings = append(warnings, fmt.Sprintf("workload: the statistics are shard %d's, the trace could not be read (%v)", parts[0].facts.Index, terr))
	}
	warnings = append(warnings, clockWarnings(sum, mi, mopts.LagLimit)...)
	sum.ServerPrefixCache = mergedServerPrefixCache(parts, sum.Throughput.WindowStartS, sum.Throughput.WindowEndS)
	sum.Warnings = append(append([]string{}, warnings...), sum.Warnings...)
	if sum.Run.Interrupted {
		sum.Warnings = append([]string{interruptedWarning}, sum.Warnings...)
	}
	if err := WriteJSON(filepath.Join(o.OutDir, SummaryFile), sum); err != nil {
		return nil, err
	}
	res := &Result{Dir: o.OutDir, Summary: sum, Records: count}
	return res, RenderReport(o.OutDir, sum, o.HTML)
}

// newMergeInfo is the summary's account of the shards merged at epoch: which were merged,
// which did not finish, which are missing, and the worst clock offset and bound among them
// (a bound of -1: some shard's offset was not measured).
func newMergeInfo(parts []*mergePart, epoch time.Time) *metrics.MergeInfo {
	first := parts[0].facts
	mi := &metrics.MergeInfo{Shards: first.Count, Epoch: epoch.UTC().Format(time.RFC3339Nano)}
	byIndex := map[int]*mergePart{}
	for _, p := range parts {
		byIndex[p.facts.Index] = p
		mi.Merged = append(mi.Merged, p.facts.Index)
		if p.sum == nil {
			mi.Partial = append(mi.Partial, p.facts.Index)
		}
		c := p.facts.Clock
		mi.WorstOffsetNs = max(mi.WorstOffsetNs, abs64(c.OffsetNs))
		if c.BoundNs < 0 || mi.WorstBoundNs < 0 {
			mi.WorstBoundNs = -1
		} else {
			mi.WorstBoundNs = max(mi.WorstBoundNs, c.BoundNs)
		}
	}
	for i := range first.Count {
		if byIndex[i] == nil {
			mi.Missing = append(mi.Missing, i)
		}
	}
	return mi
}

// writeMergedRecords streams the shards' records, rebased onto the common epoch, into the
// records file at recPath, and records as dropped the requests of a partial or missing shard
// that have no record (counted in mi.Dropped). It returns the number of records written and
// the warnings naming the directories that do not exist (absent) and the shards accounted for.
func writeMergedRecords(recPath string, parts []*mergePart, absent []string, mi *metrics.MergeInfo, trace traces.Source) (int, []string, error) {
	first := parts[0].facts
	w, err := metrics.CreateRecordFile(recPath)
	if err != nil {
		return 0, nil, err
	}
	var warnings []string
	for _, d := range absent {
		warnings = append(warnings, fmt.Sprintf("%s does not exist: skipped (a shard that never ran leaves none)", d))
	}
	for _, p := range parts {
		n, err := copyShard(w, p, trace)
		if err != nil {
			w.Close()
			return 0, nil, err
		}
		mi.Dropped += n
		if p.sum == nil {
			warnings = append(warnings, fmt.Sprintf("shard %d/%d (%s) did not finish (killed or interrupted): its %d requests without a record are counted as dropped", p.facts.Index, p.facts.Count, p.dir, n))
		}
	}
	for _, i := range mi.Missing {
		n, err := dropShard(w, first, i, trace)
		if err != nil {
			w.Close()
			return 0, nil, err
		}
		mi.Dropped += n
		warnings = append(warnings, fmt.Sprintf("shard %d/%d is missing: none of its results were given; its %d requests are counted as dropped", i, first.Count, n))
	}
	if err := w.Close(); err != nil {
		return 0, nil, fmt.Errorf("records file: %w", err)
	}
	return w.Count(), warnings, nil
}

// mergedMetricsOptions are the merged summary's options: the shards' (mopts) with the worst
// client CPU and steal fractions of the finished shards. It also returns the finished shards'
// summaries and the merged run's duration (s), the latest end of a finished shard on the
// common epoch.
func mergedMetricsOptions(mopts metrics.Options, parts []*mergePart) (metrics.Options, []*metrics.Summary, float64) {
	var sums []*metrics.Summary
	durS := 0.0
	for _, p := range parts {
		if p.sum != nil {
			sums = append(sums, p.sum)
			mopts.ClientCPUFraction = math.Max(mopts.ClientCPUFraction, p.sum.Client.CPUFraction)
			mopts.ClientStealFraction = math.Max(mopts.ClientStealFraction, p.sum.Client.CPUStealFraction)
			durS = math.Max(durS, float64(p.shift)/1e9+p.sum.Run.DurationS)
		}
	}
	return mopts, sums, durS
}

// crossCheckShards checks the records against the shards' own summaries (sums, every shard's):
// merged HdrHistograms of the shards must equal those of all the records (sum), bit for bit.
// It returns a warning per histogram that differs.
func crossCheckShards(sums []*metrics.Summary, sum *metrics.Summary) []string {
	ms, err := metrics.MergeSummaries(metrics.MergeShards, sums...)
	if err != nil {
		return nil
	}
	// A fluidity deadline derived from each shard's own median (no --slo) differs from
	// shard to shard, so the shards' fluidity histograms measure different things:
	// the merged one (from all records, with the union's deadlines) is right, and the
	// cross-check leaves fluidity out.
	skipFluidity := !sameFluidityDeadlines(sums)
	var warnings []string
	for _, d := range metrics.HistogramDiff(ms, sum) {
		if skipFluidity && isFluidityHist(d) {
			continue
		}
		warnings = append(warnings, "merge check: the shards' summaries and their records disagree: "+d)
	}
	return warnings
}

// clockWarnings says how far times across shards can be trusted: not at all closer than the
// machines' clocks when an offset was not measured; and when the worst bound is past the lag
// limit (lagLimit; <= 0: metrics.DefaultLagLimit), the merged run is marked client-limited.
func clockWarnings(sum *metrics.Summary, mi *metrics.MergeInfo, lagLimit time.Duration) []string {
	if lagLimit <= 0 {
		lagLimit = metrics.DefaultLagLimit
	}
	switch {
	case mi.WorstBoundNs < 0:
		return []string{"clock: a shard's clock offset was not measured (no llmbench time endpoint answered; see --clock-ref); times across shards are only as close as the machines' clocks"}
	case time.Duration(mi.WorstBoundNs) > lagLimit:
		why := fmt.Sprintf("client-limited: the shards' clocks are known only to within %.3g ms, above the %g ms lag limit; times across shards are not valid", float64(mi.WorstBoundNs)/1e6, float64(lagLimit)/1e6)
		sum.Client.Limited = true
		sum.Client.Reason = strings.TrimPrefix(sum.Client.Reason+"; "+why, "; ")
		return []string{why}
	}
	return nil
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// readParts reads every shard directory and checks that they are parts of one run.
func readParts(dirs []string) ([]*mergePart, []string, error) {
	var parts []*mergePart
	var absent []string
	for _, d := range dirs {
		if _, err := os.Stat(d); os.IsNotExist(err) {
			// A shard that never ran leaves no directory; it is named missing by its index.
			absent = append(absent, d)
			continue
		}
		f, err := ReadShardFacts(d)
		if err != nil {
			return nil, nil, refuse("%v", err)
		}
		p := &mergePart{dir: d, facts: f}
		if s, err := ReadSummary(d); err == nil && !s.Run.Interrupted {
			p.sum = s
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return nil, nil, refuse("none of %v exists", dirs)
	}
	sort.SliceStable(parts, func(a, b int) bool { return parts[a].facts.Index < parts[b].facts.Index })
	a := parts[0]
	for _, b := range parts[1:] {
		fa, fb := a.facts, b.facts
		switch {
		case fb.Index == fa.Index:
			return nil, nil, refuse("%s and %s are both shard %d/%d: give each shard once", a.dir, b.dir, fb.Index, fb.Count)
		case fb.Count != fa.Count:
			return nil, nil, refuse("%s is a shard of %d, %s of %d: they are parts of different runs", a.dir, fa.Count, b.dir, fb.Count)
		case fb.TraceFingerprint != fa.TraceFingerprint:
			return nil, nil, refuse("%s and %s replayed different traces (%s)", a.dir, b.dir, traceDifference(fa, fb))
		case fa.WholeTrace != nil && fb.WholeTrace != nil && len(fa.WholeTrace.Differences(fb.WholeTrace)) > 0:
			return nil, nil, refuse("%s and %s replayed different traces (%s)", a.dir, b.dir, traceDifference(fa, fb))
		case fb.StartAt != fa.StartAt:
			return nil, nil, refuse("%s starts at %q, %s at %q: shards of one run share --start-at", a.dir, fa.StartAt, b.dir, fb.StartAt)
		}
		if d := configDiff(fa, fb); d != "" {
			return nil, nil, refuse("%s and %s were run with different settings: %s", a.dir, b.dir, d)
		}
		a = b
	}
	return parts, absent, nil
}

// traceDifference says how the traces of two shards differ: the fingerprint components when
// both shard.json files carry them (an older llmbench wrote only the digest), else the digests.
func traceDifference(a, b *ShardFacts) string {
	if a.WholeTrace != nil && b.WholeTrace != nil {
		if what := a.WholeTrace.Differences(b.WholeTrace); len(what) > 0 {
			return fmt.Sprintf("%s and %s; they differ in %s", a.WholeTrace.Short(), b.WholeTrace.Short(), strings.Join(what, ", "))
		}
	}
	return fmt.Sprintf("fingerprints %s and %s", a.TraceFingerprint, b.TraceFingerprint)
}

// configDiff names the first setting in which two shards differ ("" when none does).
func configDiff(a, b *ShardFacts) string {
	keys := make([]string, 0, len(a.Config))
	for k := range a.Config {
		keys = append(keys, k)
	}
	for k := range b.Config {
		if _, ok := a.Config[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if a.Config[k] != b.Config[k] {
			return fmt.Sprintf("%s %q and %q", k, a.Config[k], b.Config[k])
		}
	}
	ja, _ := json.Marshal(a.Metrics)
	jb, _ := json.Marshal(b.Metrics)
	if string(ja) != string(jb) {
		return fmt.Sprintf("metric options (SLOs, stall threshold, prices) %s and %s", ja, jb)
	}
	if !slices.Equal(a.PerShard, b.PerShard) || a.PeriodNs != b.PeriodNs || a.RunEndNs != b.RunEndNs {
		return "the schedule (shard sizes, pass length or nominal end)"
	}
	return ""
}

// commonEpoch is the instant every merged time counts from, on the reference clock: the
// shared --start-at, else the earliest shard epoch. It sets each part's shift.
func commonEpoch(parts []*mergePart) (time.Time, error) {
	var epoch time.Time
	starts := make([]time.Time, len(parts))
	for i, p := range parts {
		t, err := time.Parse(time.RFC3339Nano, p.facts.Epoch)
		if err != nil {
			return epoch, refuse("%s/%s: epoch %q is not RFC 3339", p.dir, ShardFile, p.facts.Epoch)
		}
		starts[i] = t.Add(time.Duration(p.facts.Clock.OffsetNs)) // on the reference clock
		if i == 0 || starts[i].Before(epoch) {
			epoch = starts[i]
		}
	}
	if sa := parts[0].facts.StartAt; sa != "" {
		t, err := time.Parse(time.RFC3339Nano, sa)
		if err != nil {
			return epoch, refuse("%s/%s: start_at %q is not RFC 3339", parts[0].dir, ShardFile, sa)
		}
		epoch = t
	}
	for i, p := range parts {
		p.shift = starts[i].Sub(epoch).Nanoseconds()
	}
	return epoch, nil
}

// openMergeTrace opens the trace the shards replayed and checks its fingerprint.
func openMergeTrace(o MergeOptions, f *ShardFacts) (traces.Source, error) {
	path := o.Trace
	if path == "" {
		path = f.Trace
	}
	if path == "" {
		return nil, refuse("a shard is missing or did not finish and its requests cannot be counted: give --trace FILE")
	}
	if o.TraceSHA256 != "" {
		if err := traces.CheckSHA256(path, o.TraceSHA256); err != nil {
			return nil, refuse("--trace-sha256: %v", err)
		}
	}
	src, err := traces.OpenFile(path, traces.ReadOptions{Lenient: o.Lenient})
	if err != nil {
		return nil, refuse("a shard is missing or did not finish, and the trace its requests are counted from cannot be read (give --trace FILE): %v", err)
	}
	fp, err := traceDigest(src)
	if err != nil {
		return nil, err
	}
	if fp != f.TraceFingerprint {
		return nil, refuse("%s is not the trace the shards replayed (fingerprint %s, the shards' %s)", path, fp, f.TraceFingerprint)
	}
	return src, nil
}

// copyShard streams p's records, rebased, into w. For a shard that did not finish it then
// records every request of the shard without a record as dropped, and returns how many.
func copyShard(w *metrics.RecordWriter, p *mergePart, trace traces.Source) (int, error) {
	path := filepath.Join(p.dir, RecordsFile)
	var seen map[string]bool
	if p.sum == nil {
		seen = map[string]bool{}
	}
	f, err := os.Open(path)
	if err != nil {
		if p.sum == nil && os.IsNotExist(err) {
			return dropShardExcept(w, p.facts, p.facts.Index, trace, seen, p.shift)
		}
		return 0, err
	}
	defer f.Close()
	rr, err := metrics.NewRecordReader(f, path)
	if err != nil {
		return 0, err
	}
	var rec metrics.Record
	for {
		err := rr.Next(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			if p.sum == nil && errors.Is(err, metrics.ErrTruncated) {
				break // a killed shard's last frame may be cut: every whole record before it counts
			}
			return 0, err
		}
		if seen != nil {
			seen[recordKey(rec.ID, rec.Repeat)] = true
		}
		rec.Shift(p.shift)
		if err := w.Write(&rec); err != nil {
			return 0, err
		}
	}
	if p.sum == nil {
		return dropShardExcept(w, p.facts, p.facts.Index, trace, seen, p.shift)
	}
	return 0, nil
}

func recordKey(id string, repeat int) string { return fmt.Sprintf("%s\x00%d", id, repeat) }

// dropShard records every request of the missing shard index as dropped.
func dropShard(w *metrics.RecordWriter, f *ShardFacts, index int, trace traces.Source) (int, error) {
	return dropShardExcept(w, f, index, trace, nil, 0)
}

// dropShardExcept writes a dropped record, at its place in the schedule shifted by shift, for
// every request of shard index not in seen.
func dropShardExcept(w *metrics.RecordWriter, f *ShardFacts, index int, trace traces.Source, seen map[string]bool, shift int64) (int, error) {
	src, err := ShardSource(trace, Shard{Index: index, Count: f.Count})
	if err != nil {
		return 0, err
	}
	why := fmt.Sprintf("no record: shard %d/%d ended before this request finished (never sent, or in flight when it stopped)", index, f.Count)
	if seen == nil {
		why = fmt.Sprintf("no record: shard %d/%d is missing from the merge", index, f.Count)
	}
	n := 0
	var rec metrics.Record
	drop := func(q *traces.Request) error {
		for r := range f.Repeat {
			if seen[recordKey(q.ID, r)] {
				continue
			}
			intended := int64(float64(q.Arrival)/f.RateScale) + int64(r)*f.PeriodNs
			rec = metrics.Record{ID: q.ID, Class: q.Class, Session: q.Session, Turn: q.Turn, Repeat: r, Model: q.Model,
				Phase:    metrics.PhaseOf(time.Duration(intended), time.Duration(f.WarmupNs), time.Duration(f.CooldownNs), time.Duration(f.RunEndNs)),
				Intended: intended, InputTokens: q.InputTokens, RequestedTokens: q.OutputTokens,
				ServerInputTokens: -1, ServerOutputTokens: -1, Failure: metrics.FailDropped, Error: why}
			rec.Shift(shift)
			if err := w.Write(&rec); err != nil {
				return err
			}
			n++
		}
		return nil
	}
	if err := src.Singles(func(_ int, q *traces.Request) error { return drop(q) }); err != nil {
		return n, err
	}
	var serr error
	src.Sessions(func(_ int, q *traces.Request) {
		if serr == nil {
			serr = drop(q)
		}
	})
	return n, serr
}

// mergedRunInfo is the merged run's facts: the first finished shard's, with the common start,
// the longest shard's duration and the merge facts.
func mergedRunInfo(parts []*mergePart, command string, epoch time.Time, durS float64, mi *metrics.MergeInfo) metrics.RunInfo {
	var info metrics.RunInfo
	for _, p := range parts {
		if p.sum != nil {
			info = p.sum.Run
			break
		}
	}
	if info.Trace == "" {
		info.Trace = parts[0].facts.Trace
	}
	if command != "" {
		info.Command = command
	}
	info.Start = epoch.UTC().Format(time.RFC3339)
	info.DurationS = durS
	info.Interrupted = len(mi.Missing)+len(mi.Partial) > 0
	info.Shard = nil
	info.Merged = mi
	return info
}

// sameFluidityDeadlines reports whether every summary used the same fluidity deadlines.
func sameFluidityDeadlines(sums []*metrics.Summary) bool {
	for _, s := range sums[1:] {
		if s.Fluidity.TTFTDeadlineMs != sums[0].Fluidity.TTFTDeadlineMs || s.Fluidity.TBTDeadlineMs != sums[0].Fluidity.TBTDeadlineMs {
			return false
		}
	}
	return true
}

// isFluidityHist reports whether a HistogramDiff line is about a fluidity histogram
// ("fluidity: …" or "class/NAME/fluidity: …").
func isFluidityHist(diff string) bool {
	key, _, _ := strings.Cut(diff, ":")
	return key == "fluidity" || strings.HasSuffix(key, "/fluidity")
}

// wholeTraceFingerprint is the merged run's run.trace_fingerprint: the whole trace's, as the
// shards recorded it (readParts checked that they agree), so that compare pairs a merged run
// with a one-machine run of the same trace. Shards of an older llmbench recorded only its
// digest: the fingerprint is then computed from the trace when it could be read (and checked
// against the digest), else left out with a warning, never a shard's subset.
func wholeTraceFingerprint(f *ShardFacts, trace traces.Source) (*metrics.TraceFingerprint, string) {
	if f.WholeTrace != nil {
		return f.WholeTrace, ""
	}
	if trace != nil {
		if fp, err := FingerprintTrace(trace); err == nil && fp.Digest == f.TraceFingerprint {
			return fp, ""
		}
	}
	return nil, "trace fingerprint: the shards recorded only the trace's digest (an older llmbench) and the trace could not be read: run.trace_fingerprint is left out, so compare cannot check that another run replayed the same trace"
}

// traceDigest is the trace's fingerprint digest, as shard.json records it.
func traceDigest(src traces.Source) (string, error) {
	f, err := FingerprintTrace(src)
	if err != nil {
		return "", err
	}
	return f.Digest, nil
}
