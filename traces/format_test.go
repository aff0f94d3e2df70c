package traces

import (
	"os"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/tokenizer"
)

// TestFormatExample keeps the example in FORMAT.md valid, with token counts that match its
// text under the reference tokenizer.
func TestFormatExample(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "## Example\n\n```\n")
	if !ok {
		t.Fatal("FORMAT.md has no example block")
	}
	block, _, _ := strings.Cut(after, "```")
	reqs, err := Read(strings.NewReader(block), "FORMAT.md example", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 7 {
		t.Fatalf("%d requests", len(reqs))
	}
	ref := tokenizer.Reference{}
	for _, r := range reqs {
		n := 0
		switch {
		case r.Prompt != "":
			n = ref.Count(r.Prompt)
		case r.Messages != nil:
			for _, m := range r.Messages {
				n += ref.Count(m.Content)
			}
		default:
			continue
		}
		if n != r.InputTokens {
			t.Errorf("%s: text has %d reference tokens, input_tokens says %d", r.ID, n, r.InputTokens)
		}
	}
}
