//go:build unix

package traces

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenFileReadsAPipeOnce: a trace given as a pipe (--trace <(zcat t.jsonl.gz)) cannot be
// read twice, so it is held; reading it again would wait for a writer forever.
func TestOpenFileReadsAPipeOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pipe.jsonl")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.WriteString(`{"id":"a","arrival_s":0,"input_tokens":1,"output_tokens":1}` + "\n" + `{"id":"b","arrival_s":1,"input_tokens":1,"output_tokens":1}` + "\n")
		f.Close()
	}()
	src, err := OpenFile(p, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, held := src.(*sliceSource); !held || src.Len() != 2 {
		t.Fatalf("pipe trace: %T with %d requests, want both held in memory", src, src.Len())
	}
	for range 2 { // two passes (--repeat 2) must not touch the pipe again
		n := 0
		if err := src.Singles(func(int, *Request) error { n++; return nil }); err != nil || n != 2 {
			t.Fatalf("Singles: %d requests, %v", n, err)
		}
	}
}
