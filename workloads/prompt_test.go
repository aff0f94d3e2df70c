package workloads

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

func TestPromptTextExactUnderReference(t *testing.T) {
	ref := tokenizer.Reference{}
	spec, _ := Preset("mixed")
	spec.DurationS = 20
	spec.Arrival.Rate = 5
	reqs, err := Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	extra := []traces.Request{
		{ID: "one", InputTokens: 1},
		{ID: "partial", InputTokens: 700, HashIDs: []int64{1, 2}},     // second block partial
		{ID: "beyond", InputTokens: 1500, HashIDs: []int64{1}},        // tail after one block
		{ID: "short", InputTokens: 100, HashIDs: []int64{1, 2, 3, 4}}, // ids cover more than the prompt
	}
	reqs = append(reqs, extra...)
	p := NewPrompter(ref, 7, 512)
	for i := range reqs {
		r := &reqs[i]
		text := p.Text(r)
		if got := ref.Count(text); got != r.InputTokens {
			t.Fatalf("request %s: %d tokens, want %d", r.ID, got, r.InputTokens)
		}
		if promptText(r, nil, 7, 512) != text {
			t.Fatalf("request %s: PromptText differs from Prompter.Text", r.ID)
		}
		// Chat rule: the sum of Count(content) over messages.
		msgs := p.messages(r)
		if len(msgs) != 1 || msgs[0].Role != "user" || ref.Count(msgs[0].Content) != r.InputTokens {
			t.Fatalf("request %s: messages %+v", r.ID, msgs)
		}
	}
}

func TestPromptSharedPrefixes(t *testing.T) {
	ref := tokenizer.Reference{}
	a := &traces.Request{ID: "a", InputTokens: 1300, HashIDs: []int64{10, 11, 12}}
	b := &traces.Request{ID: "b", InputTokens: 1100, HashIDs: []int64{10, 11, 99}}
	c := &traces.Request{ID: "c", InputTokens: 300, HashIDs: []int64{10}}
	d := &traces.Request{ID: "d", InputTokens: 1300}
	ta, tb, tc, td := promptText(a, ref, 1, 512), promptText(b, ref, 1, 512), promptText(c, ref, 1, 512), promptText(d, ref, 1, 512)
	pa := ref.Pieces(ta)
	pb := ref.Pieces(tb)
	shared := strings.Join(pa[:1024], "")
	if strings.Join(pb[:1024], "") != shared {
		t.Fatal("two requests with the same two leading hash ids differ in their first 1024 tokens")
	}
	if pa[1024] == pb[1024] && pa[1025] == pb[1025] && pa[1026] == pb[1026] {
		t.Fatal("different third blocks produced the same text")
	}
	if !strings.HasPrefix(ta, tc) {
		t.Fatal("a partial block is not a prefix of the full block")
	}
	if strings.HasPrefix(td, strings.Join(pa[:3], "")) {
		t.Fatal("a request without hash ids shares text with a prefixed one")
	}
	// Another seed gives other text; the same seed the same text.
	if promptText(a, ref, 2, 512) == ta || promptText(a, ref, 1, 512) != ta {
		t.Fatal("prompt text is not a deterministic function of the seed")
	}
	// Different requests without hash ids do not share text.
	e := &traces.Request{ID: "e", InputTokens: 1300}
	if promptText(e, ref, 1, 512)[:40] == td[:40] {
		t.Fatal("two unrelated requests start with the same text")
	}
	// Never a single repeated token.
	ids := map[int]bool{}
	for _, id := range ref.Encode(ta) {
		ids[id] = true
	}
	if len(ids) < 1000 {
		t.Fatalf("only %d distinct tokens in 1300", len(ids))
	}
	// A request's own prompt wins.
	if promptText(&traces.Request{Prompt: "given", InputTokens: 9}, ref, 1, 512) != "given" {
		t.Fatal("Prompt was not returned")
	}
}

// chunky counts every whitespace-led word as ceil(len/3) tokens, and a leading run of spaces
// as one: a stand-in for a BPE tokenizer whose words split into several pieces.
type chunky struct{}

func (chunky) Name() string { return "chunky" }
func (chunky) Count(s string) int {
	n := 0
	for _, w := range strings.Fields(s) {
		n += (len(w) + 2) / 3
	}
	return n
}
func (c chunky) Encode(s string) []int { return make([]int, c.Count(s)) }

// lumpy is not additive: it counts ceil(bytes/5) of the whole text, so appending a word can
// add zero, one or two tokens.
type lumpy struct{}

func (lumpy) Name() string            { return "lumpy" }
func (lumpy) Count(s string) int      { return (len(s) + 4) / 5 }
func (l lumpy) Encode(s string) []int { return make([]int, l.Count(s)) }

func TestPromptTextFitsOtherTokenizers(t *testing.T) {
	for _, tok := range []tokenizer.Tokenizer{chunky{}, lumpy{}} {
		p := NewPrompter(tok, 3, 64)
		for _, r := range []traces.Request{
			{ID: "a", InputTokens: 1},
			{ID: "b", InputTokens: 37},
			{ID: "c", InputTokens: 500, HashIDs: []int64{1, 2, 3}},
			{ID: "d", InputTokens: 150, HashIDs: []int64{1, 2, 3}},
			{ID: "e", InputTokens: 4000, HashIDs: []int64{1}, Arrival: time.Second},
		} {
			text := p.Text(&r)
			if got := tok.Count(text); got != r.InputTokens {
				t.Errorf("%s: request %s: %d tokens, want %d", tok.Name(), r.ID, got, r.InputTokens)
			}
		}
		// Requests sharing hash ids share their full blocks byte for byte.
		x := p.Text(&traces.Request{ID: "x", InputTokens: 300, HashIDs: []int64{7, 8}})
		y := p.Text(&traces.Request{ID: "y", InputTokens: 900, HashIDs: []int64{7, 8, 9}})
		bt := p.blockText(segment{seed: p.blockSeed(7), id: 7, full: true}) + p.blockText(segment{seed: p.blockSeed(8), id: 8, full: true})
		if !strings.HasPrefix(x, bt) || !strings.HasPrefix(y, bt) || tok.Count(bt) != 128 {
			t.Errorf("%s: shared blocks are not identical prefixes (block tokens %d)", tok.Name(), tok.Count(bt))
		}
	}
}

func TestPrompterConcurrent(t *testing.T) {
	p := NewPrompter(chunky{}, 1, 32)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				r := traces.Request{ID: "r", InputTokens: 100 + i, HashIDs: []int64{1, 2}}
				if n := (chunky{}).Count(p.Text(&r)); n != r.InputTokens {
					t.Errorf("%d tokens, want %d", n, r.InputTokens)
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkPromptTextReference(b *testing.B) {
	p := NewPrompter(tokenizer.Reference{}, 1, 512)
	r := traces.Request{ID: "r", InputTokens: 4000, HashIDs: []int64{1, 2, 3}}
	for b.Loop() {
		_ = p.Text(&r)
	}
}

func BenchmarkPromptTextFitted(b *testing.B) {
	p := NewPrompter(chunky{}, 1, 512)
	r := traces.Request{ID: "r", InputTokens: 4000, HashIDs: []int64{1, 2, 3}}
	for b.Loop() {
		_ = p.Text(&r)
	}
}

func BenchmarkGenerateMixed(b *testing.B) {
	spec, _ := Preset("mixed")
	spec.Arrival.Rate = 100
	spec.DurationS = 100
	for b.Loop() {
		if _, err := Generate(spec); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPromptTextHFTokenizers fits prompts under the small Hugging Face tokenizer.json files
// the tokenizer package tests with (byte-level BPE and SentencePiece-style BPE).
func TestPromptTextHFTokenizers(t *testing.T) {
	files, _ := filepath.Glob("../tokenizer/testdata/*.tokenizer.json")
	if len(files) == 0 {
		t.Skip("no tokenizer.json fixtures in ../tokenizer/testdata")
	}
	for _, f := range files {
		tok, err := tokenizer.LoadHF(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		p := NewPrompter(tok, 5, 128)
		for _, r := range []traces.Request{
			{ID: "a", InputTokens: 1},
			{ID: "b", InputTokens: 200},
			{ID: "c", InputTokens: 700, HashIDs: []int64{1, 2, 3}},
			{ID: "d", InputTokens: 300, HashIDs: []int64{1, 2, 3}},
		} {
			text := p.Text(&r)
			if got := tok.Count(text); got != r.InputTokens {
				t.Errorf("%s: request %s: %d tokens, want %d", filepath.Base(f), r.ID, got, r.InputTokens)
			}
		}
		c := p.Text(&traces.Request{ID: "c", InputTokens: 700, HashIDs: []int64{1, 2, 3}})
		d := p.Text(&traces.Request{ID: "d", InputTokens: 300, HashIDs: []int64{1, 2, 3}})
		shared := p.blockText(segment{seed: p.blockSeed(1), id: 1, full: true}) + p.blockText(segment{seed: p.blockSeed(2), id: 2, full: true})
		if !strings.HasPrefix(c, shared) || !strings.HasPrefix(d, shared) {
			t.Errorf("%s: requests sharing hash ids do not share their leading blocks", filepath.Base(f))
		}
	}
}
