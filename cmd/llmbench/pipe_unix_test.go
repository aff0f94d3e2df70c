//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/llmbench/llmbench/usecase"
)

// TestRunFromAPipe: a trace given as a pipe is read once, replayed whole, and (when long) the
// note says to write it to a file rather than to sort it.
func TestRunFromAPipe(t *testing.T) {
	defer func(n int) { usecase.HeldNoteMin = n }(usecase.HeldNoteMin)
	usecase.HeldNoteMin = 2
	dir := t.TempDir()
	p := filepath.Join(dir, "pipe.jsonl")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.WriteString(`{"id":"a","arrival_s":0.1,"input_tokens":4,"output_tokens":2}` + "\n" + `{"id":"b","arrival_s":0.2,"input_tokens":4,"output_tokens":2}` + "\n")
		f.Close()
	}()
	app := newTestApp(nil)
	out := filepath.Join(dir, "out")
	if code := app.cli("run", "--trace", p, "--out", out, "--time-scale", "20", "--no-progress", "--repeat", "2"); code != 0 {
		t.Fatalf("exit %d: %s", code, app.err)
	}
	if !strings.Contains(app.err.String(), "because a pipe can be read only once") {
		t.Errorf("stderr:\n%s", app.err)
	}
	if n := num(t, readSummaryMap(t, out), "requests.succeeded"); n != 4 {
		t.Errorf("%v requests ok, want 2 requests x 2 repeats", n)
	}
}
