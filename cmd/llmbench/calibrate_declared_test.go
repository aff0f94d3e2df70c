package main

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/calibrate"
	"github.com/llmbench/llmbench/refengine"
)

// TestCalibrateReadsDeclaredSlots (issue 45, item 2) end to end: the engine's llama.cpp
// personality with 3 slots serves `llmbench run` over loopback HTTP at a load that never
// fills them; run.json records what /props and /slots declare, and calibrate, not told the
// slots, takes the cap from that declaration and writes it into the profile.
func TestCalibrateReadsDeclaredSlots(t *testing.T) {
	eng, err := refengine.New(refengine.Config{Wire: "llamacpp", MaxNumSeqs: 3, TimeScale: 20, Seed: 1, DisablePrefixCaching: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng.Handler())
	defer func() { srv.Close(); eng.Close() }()
	dir := t.TempDir()
	var b strings.Builder
	for i := range 12 {
		fmt.Fprintf(&b, `{"id":"d%d","arrival_s":%d,"input_tokens":%d,"output_tokens":%d}`+"\n", i, 4*i, 200+50*i, 40+5*i)
	}
	trace := filepath.Join(dir, "trace.jsonl")
	if err := os.WriteFile(trace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	app := newTestApp(nil)
	if code := app.cli("run", "--trace", trace, "--endpoint", srv.URL+"/v1", "--model", eng.ServedModelName(), "--out", out,
		"--rate-scale", "20", "--no-progress"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, app.err)
	}
	facts, err := os.ReadFile(filepath.Join(out, "run.json"))
	if err != nil || !strings.Contains(string(facts), `"llamacpp.total_slots": "3"`) {
		t.Fatalf("run.json does not record the declared slots (%v):\n%s", err, facts)
	}
	prof := filepath.Join(dir, "p.json")
	app = newTestApp(nil)
	if code := app.cli("calibrate", out, "-o", prof, "--max-evals", "40", "--enable-prefix-caching=false"); code != 0 {
		t.Fatalf("calibrate: exit %d\n%s", code, app.err)
	}
	if !strings.Contains(app.out.String(), "declared: max-num-seqs 3 by the server: llama.cpp total_slots (GET /props)") {
		t.Errorf("calibrate did not take the declared slots:\n%s", app.out)
	}
	data, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	c, err := calibrate.ParseProfileCalibration(data, prof)
	if err != nil || c == nil || c.MaxNumSeqs != 3 || c.CapSource != calibrate.CapFromDeclared || !strings.Contains(c.CapDeclaredBy, "total_slots") {
		t.Errorf("profile's calibration block: %+v %v", c, err)
	}
}
