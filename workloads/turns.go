package workloads

import "github.com/llmbench/llmbench/traces"

// TurnText is the text a session turn with token counts only adds to the conversation it
// carries (its first dependency's prompt and reply, and its other dependencies' replies, of
// convTokens tokens). The turn's input_tokens are its whole prompt (traces/FORMAT.md), so it
// adds input_tokens − convTokens tokens of its own, unique to the turn. When the conversation
// is already as long as the turn's input (the agent compacted or dropped context), the turn
// carries none: carry is false and the text is the turn's whole prompt, as Text gives it.
// loadgen (run) and runner/engineadapter (simulate) both build session prompts with it.
func (p *Prompter) TurnText(q *traces.Request, convTokens int) (text string, carry bool) {
	if convTokens <= 0 {
		return p.Text(q), true
	}
	own := q.InputTokens - convTokens
	if own < 1 {
		return p.Text(q), false
	}
	rest := *q
	rest.InputTokens, rest.HashIDs = own, nil // the carried conversation is the shared prefix
	return p.Text(&rest), true
}
