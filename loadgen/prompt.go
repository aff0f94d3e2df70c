package loadgen

import (
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// promptText synthesizes the prompt of a request that has no text of its own.
func (r *runner) promptText(q *traces.Request) string {
	seed := uint64(r.opts.Seed) ^ tokenizer.Mix(uint64(len(q.ID)))
	for i := 0; i < len(q.ID); i++ {
		seed = tokenizer.Mix(seed ^ uint64(q.ID[i]))
	}
	return tokenizer.Text(seed, 0, q.InputTokens)
}
