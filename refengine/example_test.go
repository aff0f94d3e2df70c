package refengine_test

import (
	"fmt"
	"time"

	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/tokenizer"
)

// Simulate runs a trace on a virtual clock. The two requests share a 1,024-token prefix
// through their hash_ids, so the second finds it in the prefix cache; with speculative
// decoding (k = 2, every draft accepted) the first token comes from prefill and the other
// three arrive in one chunk.
func ExampleSimulate() {
	reqs := []refengine.SimRequest{
		{ID: "a", PromptTokens: 1100, HashIDs: []int64{7, 8}, MaxTokens: 4},
		{ID: "b", Arrival: time.Second, PromptTokens: 1100, HashIDs: []int64{7, 8}, MaxTokens: 4},
	}
	res, err := refengine.Simulate(reqs, refengine.Config{Model: "llama-3.1-8b", GPU: "h100", SpecK: 2, SpecAlpha: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tl := range res.Timelines {
		chunks := []int{}
		for _, em := range tl.Emissions {
			chunks = append(chunks, em.Tokens)
		}
		text := tokenizer.Text(tl.OutputSeed, 0, tl.OutputTokens)
		fmt.Printf("%s: %d prompt tokens, %d cached, chunks %v, output of %d tokens\n", tl.ID, tl.PromptTokens,
			tl.CachedTokens, chunks, tokenizer.Reference{}.Count(text))
	}
	// Output:
	// a: 1100 prompt tokens, 0 cached, chunks [1 3], output of 4 tokens
	// b: 1100 prompt tokens, 1024 cached, chunks [1 3], output of 4 tokens
}
