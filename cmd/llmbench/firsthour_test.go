package main

import (
	"encoding/csv"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/metrics"
)

func outputHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	recs, err := metrics.ReadRecords(filepath.Join(dir, "requests.msgpack"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, r := range recs {
		if r.OutputHash == "" {
			t.Fatalf("request %s has no output hash", r.ID)
		}
		m[r.ID] = r.OutputHash
	}
	return m
}

// Two identical plain runs on the embedded engine produce identical outputs (the default
// engine seed is fixed and recorded); --engine-seed random records the seed it drew, and
// replaying with that seed reproduces the outputs.
func TestRunEngineSeedReproducible(t *testing.T) {
	run := func(extra ...string) (map[string]string, map[string]any) {
		dir := t.TempDir()
		app := newTestApp(nil)
		args := append([]string{"run", "--trace", chatSmall, "--out", dir, "--time-scale", "20", "--max-requests", "12", "--no-progress"}, extra...)
		if code := app.cli(args...); code != 0 {
			t.Fatalf("run %v: exit %d: %s", extra, code, app.err)
		}
		return outputHashes(t, dir), readSummaryMap(t, dir)
	}
	a, sa := run()
	b, _ := run()
	if got := num(t, sa, "run.engine_seed"); got != defaultEngineSeed {
		t.Errorf("run.engine_seed = %v, want the default %d", got, defaultEngineSeed)
	}
	if len(a) != 12 {
		t.Fatalf("%d records, want 12", len(a))
	}
	for id, h := range a {
		if b[id] != h {
			t.Errorf("request %s: output differs between two identical runs", id)
		}
	}
	r, sr := run("--engine-seed", "random")
	seed := field(t, sr, "run.engine_seed")
	if f, ok := seed.(float64); !ok || f == 0 {
		t.Fatalf("--engine-seed random recorded engine_seed %v", seed)
	}
	cmd, _ := field(t, sr, "run.command").(string)
	if !strings.Contains(cmd, "--engine-seed random") {
		t.Errorf("run.command %q", cmd)
	}
	differ := 0
	for id, h := range r {
		if a[id] != h {
			differ++
		}
	}
	if differ == 0 {
		t.Errorf("--engine-seed random gave the default seed's outputs")
	}
}

func TestEngineSeedFlag(t *testing.T) {
	parse := func(args ...string) *engineFlags {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f := addEngineFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		f.now = func() time.Time { return time.Unix(1700000000, 5) }
		return f
	}
	if s, err := parse().engineSeed(); err != nil || s != defaultEngineSeed {
		t.Errorf("default: %d, %v", s, err)
	}
	if s, err := parse("--engine-seed", "77").engineSeed(); err != nil || s != 77 {
		t.Errorf("77: %d, %v", s, err)
	}
	f := parse("--engine-seed", "RANDOM")
	s1, err := f.engineSeed()
	if err != nil || s1 == 0 {
		t.Fatalf("random: %d, %v", s1, err)
	}
	f.now = func() time.Time { return time.Unix(1, 0) }
	if s2, _ := f.engineSeed(); s2 != s1 {
		t.Errorf("a second call drew again: %d then %d", s1, s2)
	}
	for _, bad := range []string{"0", "-3", "x", "1.5"} {
		if _, err := parse("--engine-seed", bad).config(); err == nil || !strings.Contains(err.Error(), "--engine-seed") {
			t.Errorf("--engine-seed %s: err %v", bad, err)
		}
	}
}

func TestSimulateRecordsEngineSeed(t *testing.T) {
	dir := t.TempDir()
	app := newTestApp(nil)
	if code := app.cli("simulate", "--trace", chatSmall, "--out", dir, "--engine-seed", "5"); code != 0 {
		t.Fatalf("exit %d: %s", code, app.err)
	}
	head := strings.SplitN(app.out.String(), "\n\n", 2)[0]
	if strings.Contains(head, "seed 0") || !strings.Contains(head, "engine seed 5") {
		t.Errorf("header:\n%s", head)
	}
	if got := num(t, readSummaryMap(t, dir), "run.engine_seed"); got != 5 {
		t.Errorf("run.engine_seed = %v", got)
	}
}

func TestVersionInfo(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := versionInfo(bi).String()
	for _, w := range []string{"llmbench " + version, "commit abc123", "modified", "2026-12-01T10:00:00Z"} {
		if !strings.Contains(got, w) {
			t.Errorf("%q lacks %q", got, w)
		}
	}
	old := commit
	commit = "fedcba9"
	defer func() { commit = old }()
	got = versionInfo(bi).String()
	if !strings.Contains(got, "commit fedcba9") || strings.Contains(got, "modified") {
		t.Errorf("stamped commit: %q", got)
	}
	if got := versionInfo(nil).String(); !strings.Contains(got, "commit fedcba9") {
		t.Errorf("no build info: %q", got)
	}
	app := newTestApp(nil)
	if code := app.cli("version"); code != 0 || !strings.HasPrefix(app.out.String(), "llmbench ") || !strings.Contains(app.out.String(), "commit ") {
		t.Errorf("version: exit %d, %q", code, app.out)
	}
}

// A server that refuses every request: the terminal lists its message under the failures
// line and the CSV carries it per request, with the API key it echoed removed.
func TestRunShowsFailureMessages(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = io.WriteString(w, `{"data":[{"id":"m"}]}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+key+`","type":"invalid_request_error"}}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	app := newTestApp(map[string]string{"KEY": key})
	code := app.cli("run", "--trace", chatSmall, "--endpoint", srv.URL, "--model", "m", "--api-key-env", "KEY",
		"--max-requests", "6", "--rate-scale", "50", "--no-progress", "--out", dir)
	out := app.out.String()
	t.Log("\n" + out)
	if code == 0 && !strings.Contains(out, "6 failed") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, app.err)
	}
	if strings.Contains(out, key) {
		t.Fatalf("the API key reached the terminal:\n%s", out)
	}
	if !strings.Contains(out, "http_4xx ×6  ") || !strings.Contains(out, "Incorrect API key provided") {
		t.Errorf("no server message under the failures line:\n%s", out)
	}
	csvApp := newTestApp(nil)
	if code := csvApp.cli("report", dir, "--format", "csv"); code != 0 {
		t.Fatalf("report csv: exit %d: %s", code, csvApp.err)
	}
	rows, err := csv.NewReader(strings.NewReader(csvApp.out.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := slices.Index(rows[0], "error")
	if col < 0 || len(rows) != 7 {
		t.Fatalf("CSV header %v, %d rows", rows[0], len(rows))
	}
	for _, r := range rows[1:] {
		if !strings.Contains(r[col], "Incorrect API key provided") || strings.Contains(r[col], key) {
			t.Errorf("CSV error cell %q", r[col])
		}
	}
}
