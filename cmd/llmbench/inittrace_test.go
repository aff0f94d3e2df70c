package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// initCost is one package's line of GODEBUG=inittrace=1: what its initialization allocated.
type initCost struct {
	pkg           string
	bytes, allocs int64
}

// parseInitTrace reads the "init PKG @T ms, C ms clock, B bytes, A allocs" lines of
// GODEBUG=inittrace=1 output; other lines are skipped.
func parseInitTrace(out []byte) ([]initCost, error) {
	var costs []initCost
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "init ") {
			continue
		}
		var c initCost
		var at, clock float64
		if _, err := fmt.Sscanf(line, "init %s @%g ms, %g ms clock, %d bytes, %d allocs", &c.pkg, &at, &clock, &c.bytes, &c.allocs); err != nil {
			return nil, fmt.Errorf("inittrace line %q: %w", line, err)
		}
		costs = append(costs, c)
	}
	return costs, sc.Err()
}

// TestStartupInitIsLight builds the binary and reads what every package's initialization
// allocates in `llmbench version` (GODEBUG=inittrace=1: allocation counts, which do not depend
// on how busy the machine is): each of llmbench's own packages must make its tables on first
// use, not at start (the tokenizer's 90,000 words took 2.1 MB and k8sjob's patterns 417 KB of
// every command's start, `version` included, before they were made lazy), and the whole
// binary's initialization stays within a budget, so a dependency with a heavy init shows here.
// Whole-process start times are in docs/performance.md.
func TestStartupInitIsLight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	const (
		ownBytes, ownAllocs = 128 << 10, 1500 // any one package of this module
		allBytes            = 3 << 20         // every package: 2.7 MB now, 1.7 MB of it jsonschema's metaschemas
	)
	bin := filepath.Join(t.TempDir(), "llmbench")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("llmbench version: %v\n%s", err, stderr.Bytes())
	}
	costs, err := parseInitTrace(stderr.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(costs) < 50 {
		t.Fatalf("%d init lines: GODEBUG=inittrace=1 gave no trace\n%s", len(costs), stderr.Bytes())
	}
	var total int64
	own := 0
	for _, c := range costs {
		total += c.bytes
		if c.pkg != "main" && !strings.HasPrefix(c.pkg, "github.com/llmbench/llmbench/") {
			continue
		}
		own++
		if c.bytes > ownBytes || c.allocs > ownAllocs {
			t.Errorf("package %s allocates %d bytes in %d allocations at init (at most %d bytes, %d allocations): make its tables on first use (sync.OnceValue)",
				c.pkg, c.bytes, c.allocs, ownBytes, ownAllocs)
		}
	}
	if own < 10 {
		t.Errorf("only %d of llmbench's own packages in the trace", own)
	}
	t.Logf("%d packages initialized, %d bytes in all", len(costs), total)
	if total > allBytes {
		t.Errorf("initialization allocates %d bytes in all, more than %d: a package or dependency added work at start", total, allBytes)
	}
}

func TestParseInitTrace(t *testing.T) {
	out := []byte("init runtime @0.011 ms, 0.041 ms clock, 0 bytes, 0 allocs\nsomething else\n" +
		"init github.com/llmbench/llmbench/tokenizer @51 ms, 30 ms clock, 2155096 bytes, 90261 allocs\n")
	got, err := parseInitTrace(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []initCost{{"runtime", 0, 0}, {"github.com/llmbench/llmbench/tokenizer", 2155096, 90261}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := parseInitTrace([]byte("init x @1 ms, garbage\n")); err == nil {
		t.Error("a malformed init line was accepted")
	}
}
