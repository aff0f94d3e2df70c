package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/pgtest"
)

// eachStore runs fn against a fresh SQLite file and a fresh PostgreSQL schema.
func eachStore(t *testing.T, fn func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) {
		fn(t, filepath.Join(t.TempDir(), "sub", "history.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		fn(t, pgtest.DSN(t))
	})
}

// writeResults writes a results directory holding summary.json.
func writeResults(t *testing.T, dir string, summary []byte) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), summary, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func fixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/summary-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStoreAddIsIdempotent(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		dir := writeResults(t, filepath.Join(t.TempDir(), "night-1"), fixture(t))
		now := func() time.Time { return time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC) }
		opts := AddOptions{Tags: map[string]string{"branch": "main", "gpu": "h100"}, Revision: "abc123", Now: now}
		first, err := st.Add(ctx, []string{dir}, opts)
		if err != nil {
			t.Fatal(err)
		}
		again, err := st.Add(ctx, []string{dir, dir}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !first[0].New || again[0].New || again[1].New || again[0].ID != first[0].ID {
			t.Fatalf("add, add again: %+v then %+v; want one new run, then the same run not new", first, again)
		}
		if first[0].Metrics < 50 {
			t.Errorf("recorded %d metrics, want every scalar of the summary (50+)", first[0].Metrics)
		}
		runs, err := st.Runs(ctx, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 {
			t.Fatalf("%d runs after adding one directory three times, want 1", len(runs))
		}
		r := runs[0]
		checks := map[string][2]string{
			"model":              {r.Model, "llama-3.1-8b"},
			"revision":           {r.Revision, "abc123"},
			"tag branch":         {r.Tags["branch"], "main"},
			"engine flag":        {r.Facts["engine.num_speculative_tokens"], "3"},
			"server version":     {r.ServerVersion, "llmbench-refengine/1"},
			"llmbench version":   {r.Version, "0.1.0-dev"},
			"start":              {r.Start.Format(time.RFC3339), "2026-12-01T13:59:54Z"},
			"added":              {r.Added.Format(time.RFC3339), "2026-12-01T03:00:00Z"},
			"fingerprint prefix": {r.TraceFingerprint[:2], "w-"},
		}
		for what, c := range checks {
			if c[0] != c[1] {
				t.Errorf("%s: got %q, want %q", what, c[0], c[1])
			}
		}
		if got := r.Metrics["ttft.p99"]; got != 26.911 {
			t.Errorf("ttft.p99 = %v, want 26.911 (summary.json's value)", got)
		}
		if _, err := st.FindRun(ctx, r.Hash[:8]); err != nil {
			t.Errorf("find by hash prefix: %v", err)
		}
		if _, err := st.FindRun(ctx, "999"); err == nil || !strings.Contains(err.Error(), "history list") {
			t.Errorf("find a missing run: %v, want an error that points at history list", err)
		}
	})
}

func TestStoreMigrationsAreVersioned(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		for i := 0; i < 2; i++ {
			st, err := Open(ctx, dsn)
			if err != nil {
				t.Fatalf("open #%d: %v", i+1, err)
			}
			var n, v int
			if err := st.db.QueryRow(`SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &v); err != nil {
				t.Fatal(err)
			}
			if n != len(migrations) || v != SchemaVersion() {
				t.Fatalf("open #%d: %d migrations recorded, newest %d; want %d, %d", i+1, n, v, len(migrations), SchemaVersion())
			}
			if i == 1 {
				if _, err := st.db.Exec(st.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from the future', 'now')`), SchemaVersion()+1); err != nil {
					t.Fatal(err)
				}
			}
			st.Close()
		}
		_, err := Open(ctx, dsn)
		if err == nil || !strings.Contains(err.Error(), "newer llmbench") {
			t.Fatalf("open a store of a newer schema: %v, want a refusal that says to use a newer llmbench", err)
		}
	})
}

// TestStoreCheckFindsTheNight records 24 synthetic nights whose TPOT steps up at night 15 when
// speculative decoding is switched off, and checks that the store's series names that night
// and the flag.
func TestStoreCheckFindsTheNight(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		base := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
		r := rand.New(rand.NewPCG(5, 5))
		var dirs []string
		for night := 1; night <= 24; night++ {
			tpot, specK := 10+0.2*r.NormFloat64(), "4"
			if night >= 15 {
				tpot, specK = 14+0.2*r.NormFloat64(), "0"
			}
			sum := syntheticSummary(base.Add(time.Duration(night)*24*time.Hour), tpot, specK)
			dirs = append(dirs, writeResults(t, filepath.Join(t.TempDir(), fmt.Sprintf("night-%d", night)), sum))
		}
		// Added out of order: series follow the runs' start times.
		dirs[3], dirs[20] = dirs[20], dirs[3]
		if _, err := st.Add(ctx, dirs, AddOptions{Tags: map[string]string{"branch": "main"}}); err != nil {
			t.Fatal(err)
		}
		res, err := st.Check(ctx, CheckOptions{Metrics: []string{"tpot.p95"}, Filter: Filter{Where: map[string]string{"branch": "main"}}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Failed || len(res.Series) != 1 || len(res.Series[0].Changes) != 1 {
			t.Fatalf("check: %+v; want one failing change in one series", res)
		}
		c := res.Series[0].Changes[0]
		if filepath.Base(c.Dir) != "night-15" || c.Kind != "regression" || c.Weak {
			t.Errorf("change at %s (%s, weak %v), want a regression at night-15", c.Dir, c.Kind, c.Weak)
		}
		if len(c.Changed) != 1 || c.Changed[0] != (Diff{"engine.num_speculative_tokens", "4", "0"}) {
			t.Errorf("what changed: %+v, want engine.num_speculative_tokens 4 → 0", c.Changed)
		}
		if c.Before.Lo > 10 || c.Before.Hi < 10 || c.After.Lo > 14 || c.After.Hi < 14 {
			t.Errorf("intervals before %+v after %+v should hold the true levels 10 and 14", c.Before, c.After)
		}
		// --since after the change: reported, not failing.
		res, err = st.Check(ctx, CheckOptions{Metrics: []string{"tpot.p95"}, Since: base.Add(20 * 24 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed || len(res.Series[0].Changes) != 1 {
			t.Errorf("check --since after the change: failed=%v, %d changes; want it reported but not failing", res.Failed, len(res.Series[0].Changes))
		}
		// A tag no run has.
		if _, err := st.Check(ctx, CheckOptions{Filter: Filter{Where: map[string]string{"branch": "nope"}}}); err == nil {
			t.Error("check with a filter no run passes: no error")
		}
	})
}

// syntheticSummary is a minimal summary.json of one night.
func syntheticSummary(start time.Time, tpot float64, specK string) []byte {
	return []byte(fmt.Sprintf(`{"schema": "llmbench.summary/v1",
 "run": {"command": "llmbench simulate", "trace": "nightly.jsonl", "model": "llama-3.1-8b", "start": %q, "llmbench_version": "0.1.0",
  "mode": "simulated", "engine": {"num_speculative_tokens": %q, "gpu": "h100-sxm"}, "host": {"os": "linux", "arch": "amd64", "cpus": 8}},
 "requests": {"total": 100, "succeeded": 100, "failed": 0},
 "throughput": {"requests_per_s": 5, "output_tokens_per_s": 700},
 "latency_ms": {"tpot": {"mean": %g, "p50": %g, "p95": %g, "p99": %g, "max": %g, "count": 100},
  "ttft": {"mean": 50, "p50": 45, "p95": 80, "p99": 95, "max": 120, "count": 100}},
 "workload": {"count": 100, "rate_per_s": 5}}`, start.Format(time.RFC3339), specK, tpot, tpot, tpot, tpot, tpot))
}

func TestParseSummaryErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"schema": "llmbench.summary/v9"}`, "not one this llmbench reads"},
		{`{"requests": {}}`, `no "schema" field`},
		{"{\n\"schema\": \"llmbench.summary/v1\",\n\"run\": {\"seed\": \"x\"}}", `field "run.seed"`},
		{"{\n\"schema\": \"llmbench.summary/v1\",\n  oops}", "line 3"},
		{`{"schema": "other/v1"}`, "not an llmbench summary"},
	} {
		_, err := ParseSummary([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSummary(%q): %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestFixtureOfTodaysSummaryLoads(t *testing.T) {
	s, err := ParseSummary(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	m := Scalars(s)
	for name, want := range map[string]float64{
		"ttft.p99":                       26.911,
		"throughput.output_tokens_per_s": 898.3664879898387,
		"goodput.fraction":               1,
		"failures.fraction":              0,
	} {
		if got, ok := m[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	for name := range m {
		if _, err := LookupMetric(name); err != nil {
			t.Errorf("stored metric %s has no metric info: %v", name, err)
		}
	}
}

func TestParseTags(t *testing.T) {
	got, err := ParseTags([]string{"branch=main", " gpu = h100 "})
	if err != nil || got["branch"] != "main" || got["gpu"] != "h100" {
		t.Fatalf("ParseTags: %v, %v", got, err)
	}
	for _, bad := range []string{"novalue", "=x", "k=", "sp ace=1", "k=a\x01b"} {
		if _, err := ParseTags([]string{bad}); err == nil {
			t.Errorf("ParseTags(%q): no error", bad)
		}
	}
	if _, err := ParseTags([]string{"a=1", "a=2"}); err == nil {
		t.Error("a tag given twice with different values: no error")
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"36h":                  now.Add(-36 * time.Hour),
		"7d":                   now.Add(-7 * 24 * time.Hour),
		"2026-11-30":           time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		"2026-11-30T02:00:00Z": time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC),
	} {
		got, err := ParseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseSince("yesterday", now); err == nil {
		t.Error(`ParseSince("yesterday"): no error`)
	}
}

func TestRedactDSN(t *testing.T) {
	got := redactDSN("postgres://bench:s3cret@db.example:5432/hist?sslmode=require&password=other")
	if strings.Contains(got, "s3cret") || strings.Contains(got, "other") {
		t.Errorf("redactDSN left a password: %s", got)
	}
}

// TestStoreConcurrentOpenAndAdd: several jobs opening a new store at once all succeed (one
// applies the migrations), and adding the same results concurrently records them once.
func TestStoreConcurrentOpenAndAdd(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		dir := writeResults(t, filepath.Join(t.TempDir(), "night"), fixture(t))
		const jobs = 4
		errs := make(chan error, jobs)
		ids := make(chan int64, jobs)
		for i := 0; i < jobs; i++ {
			go func() {
				st, err := Open(ctx, dsn)
				if err != nil {
					errs <- err
					return
				}
				defer st.Close()
				a, err := st.Add(ctx, []string{dir}, AddOptions{})
				if err != nil {
					errs <- err
					return
				}
				ids <- a[0].ID
				errs <- nil
			}()
		}
		for i := 0; i < jobs; i++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		close(ids)
		first := int64(-1)
		for id := range ids {
			if first >= 0 && id != first {
				t.Fatalf("the same results recorded as runs %d and %d", first, id)
			}
			first = id
		}
		st, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var n, m int
		if err := st.db.QueryRow(`SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM schema_migrations)`).Scan(&n, &m); err != nil {
			t.Fatal(err)
		}
		if n != 1 || m != len(migrations) {
			t.Errorf("%d runs and %d migrations after %d concurrent jobs, want 1 and %d", n, m, jobs, len(migrations))
		}
	})
}
