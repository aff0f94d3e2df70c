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
}
