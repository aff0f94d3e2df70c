package traces

// HoldsHistory reports whether a session turn's messages already hold the conversation before
// it: an assistant message among them, which a turn's own new input never has (ShareGPT
// imports with --sessions, and traces recorded from chat logs, write every turn's whole
// history). A session-aware replay sends such messages as they are instead of prepending the
// conversation it carried, which would send the history twice.
func (r *Request) HoldsHistory() bool {
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			return true
		}
	}
	return false
}
