package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHFFixtureGolden checks the hand-made fixtures against ids that the Hugging Face
// tokenizers library produced for them (testdata/hfgolden/golden.js, 608 texts each).
func TestHFFixtureGolden(t *testing.T) {
	for _, name := range []string{"bytelevel", "sentencepiece"} {
		t.Run(name, func(t *testing.T) {
			checkGolden(t, loadFixture(t, name), "testdata/hfgolden/"+name+".golden.jsonl")
		})
	}
}

// TestHFGolden compares HF with the Hugging Face tokenizers library on real tokenizer files.
// Those files are large and not ours to ship, so the test runs only when
// LLMBENCH_HF_GOLDEN names a folder holding NAME.tokenizer.json and NAME.golden.jsonl pairs
// made by testdata/hfgolden/golden.js.
func TestHFGolden(t *testing.T) {
	dir := os.Getenv("LLMBENCH_HF_GOLDEN")
	if dir == "" {
		t.Skip("set LLMBENCH_HF_GOLDEN to a folder of NAME.tokenizer.json + NAME.golden.jsonl (see testdata/hfgolden/golden.js)")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.tokenizer.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no *.tokenizer.json in %s (%v)", dir, err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".tokenizer.json")
		t.Run(name, func(t *testing.T) {
			h, err := LoadHF(path)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, h, filepath.Join(dir, name+".golden.jsonl"))
		})
	}
}

// checkGolden compares Encode, Count, Decode and streamed chunk counts with a golden file of
// {"text", "ids"} lines.
func checkGolden(t *testing.T, h *HF, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	bad, n := 0, 0
	for sc.Scan() {
		var g struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatalf("%s:%d: %v", path, n+1, err)
		}
		n++
		if n == 1 {
			// Streaming this English paragraph token by token, CountChunk on the chunks
			// adds up to the token count.
			sum := 0
			for _, c := range streamChunks(h, h.Encode("Say:"), g.IDs) {
				sum += CountChunk(h, c)
			}
			if sum != len(g.IDs) {
				t.Errorf("streamed chunks count %d tokens, want %d", sum, len(g.IDs))
			}
		}
		got := h.Encode(g.Text)
		if !slices.Equal(got, g.IDs) {
			bad++
			if bad <= 5 {
				t.Errorf("Encode(%q)\n got %v\nwant %v", g.Text, got, g.IDs)
			}
		}
		if c := h.Count(g.Text); c != len(g.IDs) {
			t.Errorf("Count(%q) = %d, want %d", g.Text, c, len(g.IDs))
		}
		// Decode inverts Encode exactly for byte-level files whose normalizer does not
		// rewrite the text (Qwen's NFC does); re-encoding the decoded text gives the same ids
		// for every file, SentencePiece-style ones when the text has no "▁".
		d := h.Decode(got)
		if h.byteLevel && len(h.normalizers) == 0 && d != g.Text {
			t.Errorf("Decode(Encode(%q)) = %q", g.Text, d)
		}
		if (h.byteLevel || !strings.Contains(g.Text, "▁")) && !slices.Equal(h.Encode(d), got) {
			t.Errorf("Encode(Decode(Encode(%q))) differs: %q", g.Text, d)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("%s holds no texts", path)
	}
	t.Logf("%s: %d texts, %d differ", path, n, bad)
}
