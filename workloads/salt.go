package workloads

import "github.com/llmbench/llmbench/tokenizer"

// SaltedSeed returns the prompt seed for salt: seed itself for salt 0, otherwise a seed that
// depends on both. A Prompter built with it (NewPrompter(tok, SaltedSeed(seed, r), …)) writes
// other words for every request, with the same token counts (each segment is fitted to its
// length as for any seed) and the same sharing: requests with the same leading hash ids still
// start with identical text, and no text is shared with another salt's prompts. An A/B uses
// one salt per repeat (runner/abrepeats.go) so that a server's prefix cache does not carry
// one repeat's prompts into the next.
func SaltedSeed(seed int64, salt uint64) int64 {
	if salt == 0 {
		return seed
	}
	return int64(tokenizer.Mix(uint64(seed) ^ tokenizer.Mix(salt^0x73616c74)))
}
