package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestSimulateReplicas: simulate --replicas writes the per-replica block to summary.json and
// prints it; round-robin splits the example trace's requests evenly.
func TestSimulateReplicas(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	app := newTestApp(nil)
	if code := app.cli("simulate", "--trace", chatSmall, "--replicas", "3", "--rate-scale", "3", "--out", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, app.err.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum metrics.Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Cluster == nil || len(sum.Cluster.Replicas) != 3 || sum.Cluster.Router != "round-robin" {
		t.Fatalf("cluster block %+v", sum.Cluster)
	}
	total := 0
	for _, r := range sum.Cluster.Replicas {
		if d := r.Requests - sum.Requests.Total/3; d < 0 || d > 1 {
			t.Errorf("replica got %d of %d requests: round-robin splits evenly", r.Requests, sum.Requests.Total)
		}
		total += r.Requests
	}
	if total != sum.Requests.Total || sum.Run.Engine["replicas"] != "3" {
		t.Errorf("replicas hold %d of %d requests; engine facts %v", total, sum.Requests.Total, sum.Run.Engine)
	}
	if out := app.out.String(); !strings.Contains(out, "Replicas (3)") || !strings.Contains(out, "router round-robin") {
		t.Errorf("terminal output has no replica block:\n%s", out)
	}
	if page, err := os.ReadFile(filepath.Join(dir, "report.html")); err != nil || !strings.Contains(string(page), `id="replicas"`) {
		t.Errorf("report.html has no replica table (%v)", err)
	}
}

// TestPlanCommand: plan on the example trace prints the choice and its runner-ups, --format
// json carries every candidate, -o writes the HTML report, and a target nothing meets exits 1.
func TestPlanCommand(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "plan.html")
	args := []string{"plan", "--trace", chatSmall, "--rate-scale", "4", "--slo", "ttft=400ms,tpot=40ms", "--gpus", "h100,a100",
		"--dtypes", "bf16,fp8", "--replicas", "1..4", "--price-gpu-hour", "h100=$2.49", "--price-gpu-hour", "a100=1.79"}
	app := newTestApp(nil)
	if code := app.cli(append(args, "-o", html)...); code != 0 {
		t.Fatalf("exit %d: %s", code, app.err.String())
	}
	out := app.out.String()
	for _, want := range []string{"cheapest deployment with goodput ≥ 90.0%", "chosen", "deployment", "per Mtok"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "plan-goodput-price") || !strings.Contains(string(page), "chosen") {
		t.Errorf("plan.html lacks the chart or the table")
	}

	app = newTestApp(nil)
	if code := app.cli(append(args, "--format", "json")...); code != 0 {
		t.Fatalf("json: exit %d: %s", code, app.err.String())
	}
	var res struct {
		Best       *struct{ GPU string }
		Candidates []struct {
			Meets bool `json:"meets_target"`
		}
		Searched int
	}
	if err := json.Unmarshal([]byte(app.out.String()), &res); err != nil {
		t.Fatalf("%v:\n%s", err, app.out.String())
	}
	if res.Best == nil || len(res.Candidates) < 4 || res.Searched != len(res.Candidates) {
		t.Errorf("json: best %v, %d candidates, searched %d", res.Best, len(res.Candidates), res.Searched)
	}

	app = newTestApp(nil)
	if code := app.cli("plan", "--trace", chatSmall, "--slo", "ttft=1ms", "--replicas", "1..2", "--price-gpu-hour", "h100=2"); code != exitRegression {
		t.Errorf("unreachable SLO: exit %d, want %d: %s", code, exitRegression, app.err.String())
	}
	for _, bad := range [][]string{
		{"--replicas", "3..1"}, {"--price-gpu-hour", "h100=free"}, {"--gpus", "tpu"}, {"--format", "yaml"},
	} {
		app = newTestApp(nil)
		a := append([]string{"plan", "--trace", chatSmall, "--slo", "ttft=1s", "--price-gpu-hour", "h100=2"}, bad...)
		if code := app.cli(a...); code != exitBadInput {
			t.Errorf("%v: exit %d, want %d", bad, code, exitBadInput)
		}
	}
}

// A trace whose session turns wait for earlier turns cannot be simulated on a cluster (the
// cluster simulation takes every arrival up front): --replicas is refused with a message
// that says why, before anything is written.
func TestSimulateReplicasRefusesSessions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	app := newTestApp(nil)
	code := app.cli("simulate", "--trace", filepath.Join("..", "..", "traces", "examples", "sessions-small.jsonl"), "--replicas", "2", "--out", dir)
	if code != exitBadInput || !strings.Contains(app.err.String(), "--replicas 2") || !strings.Contains(app.err.String(), "sessions") {
		t.Fatalf("exit %d, stderr %q: want exit %d naming --replicas and the sessions", code, app.err.String(), exitBadInput)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		t.Error("a refused simulation wrote summary.json")
	}
}
