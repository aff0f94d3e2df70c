package runner

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPackageBoundaries enforces DESIGN.md's data flow: loadgen never imports refengine (nor
// refengine loadgen, metrics or reports), metrics does no network I/O, and the runner reaches
// the reference engine only through an endpoint.
func TestPackageBoundaries(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	const mod = "github.com/llmbench/llmbench/"
	forbidden := map[string][]string{
		"loadgen":   {mod + "refengine"},
		"refengine": {mod + "loadgen", mod + "metrics", mod + "reports", mod + "runner"},
		"metrics":   {"net/http", "net", mod + "loadgen", mod + "refengine", mod + "reports"},
		"reports":   {"net/http", mod + "loadgen", mod + "refengine"},
		"runner":    {mod + "refengine"},
		"traces":    {"net/http", mod + "loadgen", mod + "metrics"},
		"workloads": {"net/http", mod + "loadgen", mod + "metrics"},
		"tokenizer": {"net/http", mod + "loadgen", mod + "refengine"},
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", "../"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		deps := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			deps[d] = true
		}
		for _, b := range bad {
			if deps[b] {
				t.Errorf("%s imports %s (directly or through a dependency)", pkg, b)
			}
		}
	}
}
