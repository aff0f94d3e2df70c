package workloads

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// TestSaltedPromptsKeepLengthsAndSharing: a salted Prompter (one A/B repeat) writes other
// text than every other salt, of the same token counts on the tokenizer used, and requests
// with the same leading hash ids still share their leading blocks byte for byte. Salt 0 is
// the unsalted Prompter.
func TestSaltedPromptsKeepLengthsAndSharing(t *testing.T) {
	toks := map[string]tokenizer.Tokenizer{"reference": tokenizer.Reference{}}
	files, _ := filepath.Glob("../tokenizer/testdata/*.tokenizer.json")
	for _, f := range files {
		tok, err := tokenizer.LoadHF(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		toks[filepath.Base(f)] = tok
	}
	reqs := []traces.Request{
		{ID: "c", InputTokens: 700, HashIDs: []int64{1, 2, 3}},
		{ID: "d", InputTokens: 300, HashIDs: []int64{1, 2, 4}},
		{ID: "e", InputTokens: 150},
		{ID: "f", InputTokens: 1},
	}
	const block, salts = 128, 6
	for name, tok := range toks {
		seen := map[string]string{} // first 24 bytes of a prompt → which salt and request
		for salt := uint64(0); salt < salts; salt++ {
			p := NewPrompter(tok, SaltedSeed(5, salt), block)
			texts := make([]string, len(reqs))
			for i := range reqs {
				texts[i] = p.Text(&reqs[i])
				if got := tok.Count(texts[i]); got != reqs[i].InputTokens {
					t.Errorf("%s salt %d: request %s has %d tokens, want %d", name, salt, reqs[i].ID, got, reqs[i].InputTokens)
				}
				if len(texts[i]) < 24 {
					continue
				}
				key := texts[i][:24]
				if prev, ok := seen[key]; ok && !(reqs[i].ID == "d" && prev == fmt.Sprintf("salt %d request c", salt)) {
					t.Errorf("%s: salt %d request %s starts like %s: %q", name, salt, reqs[i].ID, prev, key)
				}
				seen[key] = fmt.Sprintf("salt %d request %s", salt, reqs[i].ID)
			}
			shared := p.blockText(segment{seed: p.blockSeed(1), id: 1, full: true}) + p.blockText(segment{seed: p.blockSeed(2), id: 2, full: true})
			if !strings.HasPrefix(texts[0], shared) || !strings.HasPrefix(texts[1], shared) {
				t.Errorf("%s salt %d: requests sharing hash ids 1, 2 do not share their leading blocks", name, salt)
			}
			if salt == 0 {
				if plain := NewPrompter(tok, 5, block).Text(&reqs[0]); plain != texts[0] {
					t.Errorf("%s: salt 0 changed the prompt", name)
				}
			}
		}
	}
}
