package traces

// NaturalEnd reports whether the request must be allowed to end where the model's answer
// ends (issue 17): a graded request (Expect) or one with Tools or a ResponseFormat is sent
// without ignore_eos and min_tokens, as a user sends it, so that a tool call or a JSON output
// ends where it is complete and is not padded (or flagged short) to reach OutputTokens, which
// is then only the max_tokens budget.
func (r *Request) NaturalEnd() bool {
	return len(r.Expect) > 0 || r.Tools != nil || r.ResponseFormat != nil
}
