package traces

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestImagesRead: image paths resolve against the trace file's directory, synthetic images
// keep their size, and the trace writes back to the same requests (in JSONL and msgpack).
func TestImagesRead(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "img"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "img", "cat.png"), []byte("\x89PNG"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "t.jsonl")
	line := `{"id":"a","arrival_s":0,"input_tokens":5,"output_tokens":2,"messages":[{"role":"user","content":"What is it?","images":[{"path":"img/cat.png"},{"width":1024,"height":768}]}]}` + "\n"
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Image{{Path: "img/cat.png", File: filepath.Join(dir, "img", "cat.png")}, {Width: 1024, Height: 768}}
	if !reflect.DeepEqual(got[0].Messages[0].Images, want) || got[0].ImageCount() != 2 {
		t.Fatalf("images %+v, want %+v", got[0].Messages[0].Images, want)
	}
	if st := ComputeStats(got); st.Images != 2 || st.WithImages != 1 {
		t.Errorf("stats: %d images in %d requests", st.Images, st.WithImages)
	}
	for _, name := range []string{"back.jsonl", "back.msgpack"} {
		out := filepath.Join(dir, name)
		if err := WriteFile(out, got); err != nil {
			t.Fatal(err)
		}
		back, err := ReadFile(out, ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(back[0].Messages, got[0].Messages) {
			t.Errorf("%s: %+v, want %+v", name, back[0].Messages, got[0].Messages)
		}
	}
	var b bytes.Buffer
	WriteJSONL(&b, got)
	if !strings.Contains(b.String(), `"images":[{"path":"img/cat.png"},{"width":1024,"height":768}]`) {
		t.Errorf("written as %s", b.String())
	}
}

// TestImagesErrors: every problem with an image names file, line and field.
func TestImagesErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.png"), nil, 0o644)
	os.Mkdir(filepath.Join(dir, "d.png"), 0o755)
	msg := func(images string) string {
		return `{"arrival_s":0,"input_tokens":1,"output_tokens":1,"messages":[{"role":"user","content":"x","images":` + images + `}]}`
	}
	for _, tc := range []struct{ images, want string }{
		{`{"path":"a.png"}`, `t.jsonl:1: messages[0].images: must be an array`},
		{`[{"path":"missing.png"}]`, `t.jsonl:1: messages[0].images[0].path: cannot read "missing.png" (paths are relative to the trace file): no such file`},
		{`[{"path":"a.txt"}]`, `t.jsonl:1: messages[0].images[0].path: must end in .png, .jpg, .jpeg, .gif or .webp (got "a.txt")`},
		{`[{"path":"d.png"}]`, `t.jsonl:1: messages[0].images[0].path: "d.png" is not a regular file`},
		{`[{"width":10}]`, `t.jsonl:1: messages[0].images[0]: needs "path" (an image file) or both "width" and "height"`},
		{`[{"width":0,"height":5}]`, `t.jsonl:1: messages[0].images[0].width: must be an integer from 1 to 8192 (pixels)`},
		{`[{"width":9000,"height":5}]`, `t.jsonl:1: messages[0].images[0].width: must be an integer from 1 to 8192`},
		{`[{"path":"a.png","width":3,"height":3}]`, `t.jsonl:1: messages[0].images[0]: give path (an image file) or width and height`},
		{`[{"url":"http://x"}]`, `t.jsonl:1: messages[0].images[0].url: unknown field`},
		{`[5]`, `t.jsonl:1: messages[0].images[0]: must be an object`},
	} {
		path := filepath.Join(dir, "t.jsonl")
		os.WriteFile(path, []byte(msg(tc.images)+"\n"), 0o644)
		_, err := ReadFile(path, ReadOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.images, err, tc.want)
		}
	}
	// An unknown field of an image is ignored with Lenient.
	path := filepath.Join(dir, "t.jsonl")
	os.WriteFile(path, []byte(msg(`[{"width":4,"height":4,"detail":"high"}]`)+"\n"), 0o644)
	if _, err := ReadFile(path, ReadOptions{Lenient: true}); err != nil {
		t.Errorf("lenient: %v", err)
	}
}

// TestImagesRebase: a trace written to another directory (trace slice, scale, ... -o) keeps
// finding its image files: their paths are rewritten relative to the new file.
func TestImagesRebase(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "in", "img"), 0o755)
	os.MkdirAll(filepath.Join(dir, "out", "deep"), 0o755)
	os.WriteFile(filepath.Join(dir, "in", "img", "a.png"), nil, 0o644)
	in := filepath.Join(dir, "in", "t.jsonl")
	os.WriteFile(in, []byte(`{"arrival_s":0,"input_tokens":1,"output_tokens":1,"messages":[{"role":"user","content":"x","images":[{"path":"img/a.png"},{"width":2,"height":2}]}]}`+"\n"), 0o644)
	reqs, err := ReadFile(in, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out", "deep", "t.jsonl")
	if err := WriteFile(out, reqs); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile(out, ReadOptions{})
	if err != nil {
		t.Fatalf("the rewritten trace does not find its image: %v", err)
	}
	if got := back[0].Messages[0].Images[0].Path; got != "../../in/img/a.png" {
		t.Errorf("path %q", got)
	}
	if reqs[0].Messages[0].Images[0].Path != "img/a.png" {
		t.Error("WriteFile modified its input")
	}
}
