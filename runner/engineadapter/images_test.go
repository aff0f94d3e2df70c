package engineadapter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/traces"
)

// An image file past traces.MaxImageBytes is refused with its path before it is read (the
// engine over HTTP would refuse the request body too), and so is a path that is no regular file.
func TestSimulatedImageFilesAreBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "huge.png")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(traces.MaxImageBytes + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	for _, path := range []string{big, dir} {
		req := traces.Request{ID: "r1", Messages: []traces.Message{{Role: "user", Content: "look", Images: []traces.Image{{File: path}}}}}
		sims := []refengine.SimRequest{{ID: "r1"}}
		err := addImages(sims, []traces.Request{req})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "at most") {
			t.Errorf("%s: error %v, want one naming the file and the bound", path, err)
		}
	}
}
