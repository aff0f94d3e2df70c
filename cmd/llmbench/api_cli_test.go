package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// workloadOf reads the workload block of dir/summary.json.
func workloadBlock(t *testing.T, dir string) map[string]any {
	t.Helper()
	s := readSummaryStruct(t, dir)
	b, _ := json.Marshal(s.Workload)
	var w map[string]any
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestRunAPIsCLI: llmbench run --api responses|messages|embeddings against the embedded
// engine succeeds for every request, counts tokens from the server's usage, and the summary's
// workload block names the API (and the batch size).
func TestRunAPIsCLI(t *testing.T) {
	dir := t.TempDir()
	trace, _ := writeTrace(t, dir, "t.jsonl", traceSpec{prefix: "q", n: 6, spacing: 20 * time.Millisecond, in: 40, out: 12})
	for _, tc := range []struct {
		api   string
		extra []string
		want  int // records
	}{
		{"responses", nil, 6},
		{"messages", nil, 6},
		{"responses", []string{"--no-stream"}, 6},
		{"embeddings", []string{"--batch-size", "4"}, 2},
	} {
		t.Run(tc.api+strings.Join(tc.extra, ""), func(t *testing.T) {
			out := filepath.Join(dir, tc.api+strings.Join(tc.extra, ""))
			args := append([]string{"run", "--trace", trace, "--api", tc.api, "--time-scale", "20", "--out", out, "--no-progress"}, tc.extra...)
			mustRun(t, newTestApp(nil), args...)
			s := readSummaryStruct(t, out)
			if s.Requests.Total != tc.want || s.Requests.Succeeded != tc.want || s.Requests.TokenSource["usage"] != tc.want {
				t.Fatalf("requests %+v", s.Requests)
			}
			if tc.api == "embeddings" && (s.Requests.InputTokens != 6*40 || s.Requests.OutputTokens != 0) {
				t.Errorf("embeddings: %d input / %d output tokens, want 240 / 0", s.Requests.InputTokens, s.Requests.OutputTokens)
			}
			if tc.api != "embeddings" && s.Requests.OutputTokens != 6*12 {
				t.Errorf("%d output tokens, want 72", s.Requests.OutputTokens)
			}
			w := workloadBlock(t, out)
			if w["api"] != tc.api || (tc.api == "embeddings") != (w["batch_size"] == 4.0) {
				t.Errorf("workload api %v batch_size %v", w["api"], w["batch_size"])
			}
		})
	}
}

// TestGenMultimodalRun: gen --preset multimodal writes requests whose messages carry
// synthetic images and no text; run replays them (text synthesized, images generated) and
// the summary's workload counts the images; the trace validates and trace stats shows them.
func TestGenMultimodalRun(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "mm.jsonl")
	mustRun(t, newTestApp(nil), "gen", "--preset", "multimodal", "--rate", "4", "--duration", "2s", "--seed", "3", "-o", trace)
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"images":[{"width":`) {
		t.Fatalf("no images in the generated trace:\n%.400s", data)
	}
	app := newTestApp(nil)
	mustRun(t, app, "trace", "stats", trace)
	if !strings.Contains(app.out.String(), "images ") {
		t.Errorf("trace stats:\n%s", app.out.String())
	}
	out := filepath.Join(dir, "out")
	// (No connect timeout: at --time-scale 20 its 30 s are 1.5 s of wall time, which a loaded
	// machine under -race can spend encoding and decoding megabyte bodies of images.)
	mustRun(t, newTestApp(nil), "run", "--trace", trace, "--time-scale", "20", "--timeout-connect", "0", "--max-requests", "4", "--out", out, "--no-progress")
	s := readSummaryStruct(t, out)
	if s.Requests.Succeeded != 4 {
		t.Fatalf("requests %+v", s.Requests)
	}
	w := workloadBlock(t, out)
	if w["api"] != "chat" || !(w["images"].(float64) >= w["with_images"].(float64)) || w["with_images"] != w["count"] {
		t.Errorf("workload %v", w)
	}
}
