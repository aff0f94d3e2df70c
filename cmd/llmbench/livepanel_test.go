package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestLivePanelInTmux runs `llmbench run` on a real terminal (a detached tmux pane of 90×30)
// and reads the screen as tmux rendered it: the live panel is there with its figures, drawn
// once (redrawn in place, not scrolled), and no line is wider than the pane. It polls the
// pane for a condition with a deadline; nothing waits a fixed time.
func TestLivePanelInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux not installed (apt-get install -y tmux)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "llmbench")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	trace, err := filepath.Abs(chatSmall)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "tmux.sock")
	session := "llmbench-live"
	tm := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out), err
	}
	// The run is slow enough to watch (real time, 96 requests over about 22 s) and ends with
	// a pause so the final frame stays on screen.
	cmd := bin + " run --trace " + trace + " --out " + filepath.Join(dir, "res") + " --scrape-metrics; sleep 30"
	if out, err := tm("new-session", "-d", "-s", session, "-x", "90", "-y", "30", "env", "TERM=xterm", "sh", "-c", cmd); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	defer func() { _, _ = tm("kill-server") }()

	var screen string
	deadline := time.Now().Add(60 * time.Second)
	want := []string{"llmbench · ", " done", "sent ", "in flight", "completed", "last 10 s: TTFT p50", "output tok/s",
		"schedule lag p99", "server: "}
	for {
		screen, err = tm("capture-pane", "-p", "-t", session)
		if err != nil {
			t.Fatalf("capture-pane: %v\n%s", err, screen)
		}
		missing := ""
		for _, w := range want {
			if !strings.Contains(screen, w) {
				missing = w
				break
			}
		}
		// Wait for a frame with a completed request and a server sample.
		if missing == "" && !strings.Contains(screen, "completed 0 ") && strings.Contains(screen, " running · ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the panel never showed %q; screen:\n%s", missing, screen)
		}
		time.Sleep(100 * time.Millisecond) // polling the pane, not synchronizing the run
	}
	t.Logf("screen:\n%s", screen)
	if n := strings.Count(screen, "last 10 s:"); n != 1 {
		t.Errorf("the panel is on screen %d times, want once (redrawn in place):\n%s", n, screen)
	}
	if !strings.Contains(screen, "client healthy") && !strings.Contains(screen, "client LIMITED") {
		t.Errorf("no client-health verdict:\n%s", screen)
	}
	for _, l := range strings.Split(screen, "\n") {
		if n := utf8.RuneCountInString(l); n > 90 {
			t.Errorf("line of %d columns in a 90-column pane: %q", n, l)
		}
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatal(err)
	}
}

// Not on a terminal the display prints plain lines (no escape sequences) for CI logs;
// --no-progress prints none.
func TestProgressPlainLinesAndNoProgress(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		app := newTestApp(nil)
		args := []string{"run", "--trace", chatSmall, "--out", t.TempDir(), "--time-scale", "20", "--max-requests", "6"}
		if quiet {
			args = append(args, "--no-progress")
		}
		if code := app.cli(args...); code != 0 {
			t.Fatalf("exit %d: %s", code, app.err)
		}
		errOut := app.err.String()
		if strings.Contains(errOut, "\033") {
			t.Errorf("escape sequences in a non-terminal's output: %q", errOut)
		}
		has := strings.Contains(errOut, "6/6 done · sent 6 · in flight 0 · completed 6 · failed 0 · last 10 s: TTFT p50")
		if has == quiet {
			t.Errorf("--no-progress=%v: stderr %q", quiet, errOut)
		}
	}
}
