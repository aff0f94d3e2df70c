package workloads

import (
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// promptText is the prompt of one request from a fresh Prompter.
func promptText(req *traces.Request, tok tokenizer.Tokenizer, seed int64, blockTokens int) string {
	return NewPrompter(tok, seed, blockTokens).Text(req)
}
