package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/traces"
)

// TestTraceFetchThenRunChecksTheDigest is what a shard pod of `k8s job --trace-url` does: the
// init container fetches the trace (kept only when its digest matches), and run refuses a
// trace file whose digest is not the one planned, before sending anything.
func TestTraceFetchThenRunChecksTheDigest(t *testing.T) {
	body, err := os.ReadFile("testdata/k8s-example.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	sum, err := traces.FileSHA256("testdata/k8s-example.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.jsonl")
	app := newTestApp(nil)
	if code := app.cli("trace", "fetch", srv.URL+"/t.jsonl", "--sha256", strings.Repeat("0", 64), "-o", trace); code == 0 || !strings.Contains(app.err.String(), "not the 0000") {
		t.Fatalf("a wrong digest was accepted: exit %d, %s", code, app.err.String())
	}
	if _, err := os.Stat(trace); !os.IsNotExist(err) {
		t.Fatal("a trace with the wrong digest was written")
	}
	mustRun(t, newTestApp(nil), "trace", "fetch", srv.URL+"/t.jsonl", "--sha256", sum, "-o", trace)

	out := filepath.Join(dir, "res")
	mustRun(t, newTestApp(nil), "run", "--trace", trace, "--trace-sha256", sum, "--no-progress", "--out", out, "--rate-scale", "1e3")
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(trace, append(body, body[:len(body)/2]...), 0o644) // changed after planning
	app = newTestApp(nil)
	if code := app.cli("run", "--trace", trace, "--trace-sha256", sum, "--no-progress", "--out", filepath.Join(dir, "res2")); code == 0 ||
		!strings.Contains(app.err.String(), "--trace-sha256") || !strings.Contains(app.err.String(), "not the trace the run was planned with") {
		t.Fatalf("a changed trace ran: exit %d, %s", code, app.err.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "res2")); !os.IsNotExist(err) {
		t.Fatal("a refused run left a results directory")
	}
}
