package history

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/metrics"
)

// AddOptions configure Add.
type AddOptions struct {
	// Tags are recorded with every run added (branch, hardware, environment); a run's tags are
	// part of its configuration: series never mix runs whose tags differ.
	Tags map[string]string
	// Revision is the git revision (or any version label) of what was measured; empty means
	// unknown.
	Revision string
	// Now stamps added_at; time.Now when nil.
	Now func() time.Time
}

// Added is what Add did with one results directory.
type Added struct {
	Dir     string
	ID      int64
	Hash    string
	New     bool // false: the same results were already recorded (nothing changed)
	Metrics int  // scalar metrics recorded
	// Intervals is how many of them have the run's own interval (0 without requests.msgpack).
	Intervals int
	// Backfilled: the run was recorded before without intervals, and they were added now.
	Backfilled bool
	// IntervalsLeftOut is Run.IntervalsLeftOut.
	IntervalsLeftOut string
}

// Run is one recorded run: its facts, tags and metrics.
type Run struct {
	ID               int64
	Hash             string
	Dir              string
	Start            time.Time
	Added            time.Time
	SummarySchema    string
	Version          string
	Revision         string
	Trace            string
	TraceFingerprint string
	Model            string
	Backend          string
	Mode             string
	Endpoint         string
	Machine          string
	ServerVersion    string
	Command          string
	// Facts are the configuration the run saw, flattened ("engine.gpu", "host.cpus", "seed",
	// …): what the configuration differences of a change point are computed from.
	Facts   map[string]string
	Tags    map[string]string
	Metrics map[string]float64
	// Intervals are the run's own (within-run) intervals of its metrics, from a block
	// bootstrap of its records (metrics.RunIntervals); empty for a run added without its
	// requests.msgpack or of more than MaxIntervalRequests requests (IntervalsLeftOut says
	// why). Each interval's Value is the run's metric.
	Intervals map[string]metrics.RunInterval
	// IntervalsLeftOut says why a run with records has no intervals ("" when it has them).
	IntervalsLeftOut string
}

var tagKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ParseTags parses k=v tags (--tag branch=main). A key is letters, digits, '_', '.', '-' (up to
// 64); a value is non-empty printable text (up to 200 characters).
func ParseTags(kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case !ok || k == "" || v == "":
			return nil, fmt.Errorf("tag %s: write it as key=value, e.g. branch=main", quote(kv))
		case !tagKey.MatchString(k):
			return nil, fmt.Errorf("tag key %s: use letters, digits, '_', '.' or '-' (up to 64)", quote(k))
		case len(v) > 200 || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return nil, fmt.Errorf("tag %s: the value must be printable text of at most 200 characters", quote(k))
		}
		if old, dup := out[k]; dup && old != v {
			return nil, fmt.Errorf("tag %s given twice (%s and %s)", quote(k), quote(old), quote(v))
		}
		out[k] = v
	}
	return out, nil
}

// Add records each results directory. It is idempotent: a run is identified by the content
// hash of its results (summary.json and, when present, requests.msgpack), so a directory that
// is already recorded is reported with New=false and left as it is. Each directory is one
// transaction; the first error stops (earlier directories stay recorded).
func (s *Store) Add(ctx context.Context, dirs []string, o AddOptions) ([]Added, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	var out []Added
	for _, dir := range dirs {
		run, err := ReadResults(dir)
		if err != nil {
			return out, err
		}
		run.Revision = o.Revision
		if run.Revision != "" {
			run.Facts["revision"] = run.Revision
		}
		run.Tags = o.Tags
		run.Added = now().UTC()
		a, err := s.insert(ctx, run)
		if err != nil {
			return out, fmt.Errorf("history: add %s to %s: %w", dir, s.where, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// ReadResults reads a results directory into a Run (without an id, tags or revision): its
// summary.json facts and scalar metrics and the content hash of its results.
func ReadResults(dir string) (*Run, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", dir, err)
	}
	path := filepath.Join(abs, "summary.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("history: %s has no summary.json; give a results directory written by llmbench run or simulate", dir)
		}
		return nil, fmt.Errorf("history: %w", err)
	}
	sum, err := ParseSummary(raw)
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", path, err)
	}
	h := sha256.New()
	h.Write(raw)
	recPath := filepath.Join(abs, "requests.msgpack")
	hasRecords := false
	if f, err := os.Open(recPath); err == nil {
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("history: read %s: %w", filepath.Join(dir, "requests.msgpack"), err)
		}
		hasRecords = true
	}
	run := runOf(sum, raw)
	run.Dir = abs
	run.Hash = hex.EncodeToString(h.Sum(nil))
	switch {
	case hasRecords && sum.Requests.Total > MaxIntervalRequests:
		run.IntervalsLeftOut = fmt.Sprintf("its own intervals are left out: %d requests is more than the %d whose bootstrap history add computes (it holds every request's values)", sum.Requests.Total, MaxIntervalRequests)
	case hasRecords:
		iv, err := runIntervals(abs, recPath, run)
		if err != nil {
			return nil, fmt.Errorf("history: %s: %w", filepath.Join(dir, "requests.msgpack"), err)
		}
		run.Intervals = iv
	}
	return run, nil
}

// MaxIntervalRequests bounds the runs whose own intervals Add computes: the block bootstrap holds
// every request's scalar values (about 1 KB each; bins are merged by time block as the records
// are read again) and resamples the blocks 200 times: on 2 cores 100,000 requests took 4.9 s and
// 147 MB, 1,000,000 took 54 s and 1.08 GB; a larger run is recorded without intervals.
const MaxIntervalRequests = 200_000

// runIntervals computes the run's own intervals from its records, with the metric options
// of its run.json (the SLOs and thresholds its summary was made with; without run.json, the
// defaults). An interval is kept only for a metric whose value from the records is the
// summary's own (within 0.5%: the summary's percentiles come from histograms) and is centred
// on the summary's value; a metric the options could not reproduce gets no interval rather
// than one around another number. The bootstrap's seed is the run's content
// hash, so adding the same results again gives the same intervals.
func runIntervals(dir, recPath string, run *Run) (map[string]metrics.RunInterval, error) {
	var facts struct {
		Metrics metrics.Options `json:"metrics"`
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "run.json")); err == nil {
		if err := json.Unmarshal(raw, &facts); err != nil {
			return nil, fmt.Errorf("run.json: %s", jsonErr(raw, err))
		}
	}
	seed, _ := strconv.ParseUint(run.Hash[:16], 16, 64)
	all, err := metrics.RunIntervals([]metrics.Source{metrics.FileSource(recPath)},
		metrics.RunIntervalOptions{Summary: facts.Metrics, Seed: seed})
	if err != nil {
		return nil, err
	}
	out := map[string]metrics.RunInterval{}
	for name, iv := range all {
		v, ok := run.Metrics[name]
		// The summary's percentiles come from its histograms (three significant digits), the
		// bootstrap's from exact values: they agree to a fraction of a percent. A larger gap
		// means other options (SLOs, thresholds) and the interval is left out.
		if !ok || math.Abs(iv.Value-v) > 0.005*math.Abs(v)+1e-9 {
			continue
		}
		out[name] = metrics.RunInterval{Value: v, Lo: v - (iv.Value - iv.Lo), Hi: v + (iv.Hi - iv.Value), SE: iv.SE}
	}
	return out, nil
}

// maxSummaryBytes bounds summary.json; a real one is well under a few MB.
const maxSummaryBytes = 64 << 20

// ParseSummary decodes summary.json, accepting every summary of schema llmbench.summary/v1
// (fields added since are optional, unknown fields are ignored) and refusing anything else with
// a message that says what it is.
func ParseSummary(raw []byte) (*metrics.Summary, error) {
	if len(raw) > maxSummaryBytes {
		return nil, fmt.Errorf("%d bytes is too large for a summary (at most %d)", len(raw), maxSummaryBytes)
	}
	var head struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("not JSON: %s", jsonErr(raw, err))
	}
	switch {
	case head.Schema == nil:
		return nil, errors.New(`no "schema" field: not an llmbench summary.json`)
	case *head.Schema != metrics.SummarySchema:
		if strings.HasPrefix(*head.Schema, "llmbench.summary/") {
			return nil, fmt.Errorf("schema %s is not one this llmbench reads (%s); add it with the llmbench that wrote it or a newer one", quote(*head.Schema), metrics.SummarySchema)
		}
		return nil, fmt.Errorf("schema %s: not an llmbench summary.json", quote(*head.Schema))
	}
	var s metrics.Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("field types: %s", jsonErr(raw, err))
	}
	return &s, nil
}

// jsonErr says where in raw a JSON error is (line and column when the decoder gives an
// offset).
func jsonErr(raw []byte, err error) string {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
		if te.Field != "" {
			return fmt.Sprintf("field %s: %s value where %s was expected", quote(te.Field), te.Value, te.Type)
		}
	}
	if off < 0 || off > int64(len(raw)) {
		return err.Error()
	}
	line := 1 + bytes.Count(raw[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(raw[:off], '\n'))
	return fmt.Sprintf("line %d, column %d: %v", line, col, err)
}

// runOf collects a run's facts from its summary.
func runOf(s *metrics.Summary, raw []byte) *Run {
	r := s.Run
	run := &Run{
		SummarySchema: s.Schema,
		Version:       r.Version,
		Trace:         r.Trace,
		Model:         r.Model,
		Backend:       r.Backend,
		Mode:          r.Mode,
		Endpoint:      r.Endpoint,
		Command:       r.Command,
		Facts:         map[string]string{},
		Metrics:       Scalars(s),
	}
	if t, err := time.Parse(time.RFC3339Nano, r.Start); err == nil {
		run.Start = t.UTC()
	}
	run.TraceFingerprint = traceFingerprint(s, raw)
	run.ServerVersion = firstOf(r.Engine, "server.version", "version")
	var host []string
	if r.Host.OS != "" {
		host = append(host, r.Host.OS+"/"+r.Host.Arch)
	}
	if r.Host.CPUs > 0 {
		host = append(host, strconv.Itoa(r.Host.CPUs)+" CPUs")
	}
	if r.Host.CPUModel != "" {
		host = append(host, r.Host.CPUModel)
	}
	run.Machine = strings.Join(host, ", ")

	f := run.Facts
	set := func(k, v string) {
		if v != "" {
			f[k] = v
		}
	}
	set("llmbench_version", r.Version)
	set("model", r.Model)
	set("backend", r.Backend)
	set("api", r.API)
	set("mode", r.Mode)
	set("endpoint", r.Endpoint)
	set("tokenizer", r.Tokenizer)
	set("trace", filepath.Base(r.Trace))
	set("seed", strconv.FormatInt(r.Seed, 10))
	if r.Concurrency > 0 {
		set("concurrency", strconv.Itoa(r.Concurrency))
	}
	if r.MaxConcurrency > 0 {
		set("max_concurrency", strconv.Itoa(r.MaxConcurrency))
	}
	if r.RateScale != 0 {
		set("rate_scale", strconv.FormatFloat(r.RateScale, 'g', -1, 64))
	}
	if r.Repeat > 0 {
		set("repeat", strconv.Itoa(r.Repeat))
	}
	for k, v := range r.Engine {
		set("engine."+k, v)
	}
	set("host.os", r.Host.OS)
	set("host.arch", r.Host.Arch)
	if r.Host.CPUs > 0 {
		set("host.cpus", strconv.Itoa(r.Host.CPUs))
	}
	set("host.cpu_model", r.Host.CPUModel)
	set("host.go_version", r.Host.GoVersion)
	return run
}

func firstOf(m map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := m[k]; v != "" {
			return v
		}
	}
	return ""
}

// traceFingerprint identifies the traffic a run replayed: the digest of the summary's own
// trace fingerprint (run.trace_fingerprint, with the rate scale when it is not 1, since the
// same trace at another rate is other traffic), else a hash of the workload facts it records
// (request count, duration, rate, burstiness, length distributions, classes, prefix reuse),
// else of the trace's file name and request count. Two runs of the same trace and rate scale
// get the same fingerprint on any machine.
func traceFingerprint(s *metrics.Summary, raw []byte) string {
	if fp := s.Run.TraceFingerprint; fp != nil && fp.Digest != "" {
		if rs := s.Run.RateScale; rs != 0 && rs != 1 {
			return fmt.Sprintf("%s×%g", fp.Digest, rs)
		}
		return fp.Digest
	}

	h := sha256.New()
	if s.Workload != nil {
		// encoding/json writes map keys sorted, so the same facts give the same bytes.
		b, err := json.Marshal(s.Workload)
		if err == nil {
			h.Write([]byte("workload\x00"))
			h.Write(b)
			return "w-" + hex.EncodeToString(h.Sum(nil))[:16]
		}
	}
	fmt.Fprintf(h, "trace\x00%s\x00%d", filepath.Base(s.Run.Trace), s.Requests.Total)
	return "t-" + hex.EncodeToString(h.Sum(nil))[:16]
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

const timeLayout = "2006-01-02T15:04:05.000000000Z"

func (s *Store) insert(ctx context.Context, run *Run) (Added, error) {
	a := Added{Dir: run.Dir, Hash: run.Hash, Metrics: len(run.Metrics), IntervalsLeftOut: run.IntervalsLeftOut}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return a, err
	}
	defer tx.Rollback()
	err = tx.QueryRowContext(ctx, s.q(`INSERT INTO runs (content_hash, results_dir, started_at, added_at, summary_schema,
		llmbench_version, revision, trace, trace_fingerprint, model, backend, mode, endpoint, machine, server_version, command)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (content_hash) DO NOTHING RETURNING id`),
		run.Hash, run.Dir, run.Start.UTC().Format(timeLayout), run.Added.UTC().Format(timeLayout), run.SummarySchema,
		run.Version, run.Revision, run.Trace, run.TraceFingerprint, run.Model, run.Backend, run.Mode, run.Endpoint,
		run.Machine, run.ServerVersion, run.Command).Scan(&a.ID)
	if errors.Is(err, sql.ErrNoRows) {
		if err := tx.QueryRowContext(ctx, s.q(`SELECT id FROM runs WHERE content_hash = ?`), run.Hash).Scan(&a.ID); err != nil {
			return a, err
		}
		var n int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM run_metrics WHERE run_id = ?`), a.ID).Scan(&n); err != nil {
			return a, err
		}
		a.Metrics = n
		// A run recorded by an older llmbench, or before its records were at hand, gets its
		// intervals now; a run that has them keeps them.
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM run_intervals WHERE run_id = ?`), a.ID).Scan(&n); err != nil {
			return a, err
		}
		if n > 0 || len(run.Intervals) == 0 {
			a.Intervals = n
			return a, nil
		}
		if err := s.insertIntervals(ctx, tx, a.ID, run.Intervals); err != nil {
			return a, err
		}
		a.Intervals, a.Backfilled = len(run.Intervals), true
		return a, tx.Commit()
	}
	if err != nil {
		return a, err
	}
	a.New = true
	for _, k := range sortedKeys(run.Facts) {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO run_facts (run_id, key, value) VALUES (?, ?, ?)`), a.ID, k, run.Facts[k]); err != nil {
			return a, err
		}
	}
	for _, k := range sortedKeys(run.Tags) {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO run_tags (run_id, key, value) VALUES (?, ?, ?)`), a.ID, k, run.Tags[k]); err != nil {
			return a, err
		}
	}
	for _, k := range sortedKeys(run.Metrics) {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO run_metrics (run_id, metric, value) VALUES (?, ?, ?)`), a.ID, k, run.Metrics[k]); err != nil {
			return a, err
		}
	}
	if err := s.insertIntervals(ctx, tx, a.ID, run.Intervals); err != nil {
		return a, err
	}
	a.Intervals = len(run.Intervals)
	return a, tx.Commit()
}

func (s *Store) insertIntervals(ctx context.Context, tx *sql.Tx, id int64, ivs map[string]metrics.RunInterval) error {
	for _, k := range sortedKeys(ivs) {
		iv := ivs[k]
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO run_intervals (run_id, metric, lo, hi, se) VALUES (?, ?, ?, ?, ?)`), id, k, iv.Lo, iv.Hi, iv.SE); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// quote quotes outside text for a message: escaped, and cut to about 80 bytes.
func quote(s string) string {
	q := strconv.Quote(s)
	if len(q) <= 80 {
		return q
	}
	cut := 0
	for i := range q {
		if i > 74 {
			break
		}
		cut = i
	}
	// Do not end inside an escape sequence.
	if j := strings.LastIndexByte(q[:cut], '\\'); j >= 0 && cut-j < 10 {
		cut = j
	}
	return q[:cut] + `..."`
}
