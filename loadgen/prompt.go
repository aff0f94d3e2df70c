package loadgen

import (
	"github.com/llmbench/llmbench/traces"
)

// promptText synthesizes the prompt of a request that has no text of its own: exactly
// InputTokens tokens under the run's tokenizer, sharing the text of its leading hash_ids
// blocks with every other request that shares them (package workloads).
func (r *runner) promptText(q *traces.Request) string {
	return r.prompter.Text(q)
}
