package loadgen

import (
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// settleInput sets rec's prompt count once the response is in: the server's
// usage.prompt_tokens when it reported one (it is what the server processed), else the
// client tokenizer's count of the prompt as sent, else the trace's input_tokens; and the
// length the trace asked for when the prompt was synthesized (docs/inputs.md).
func settleInput(rec *metrics.Record, k *call) {
	rec.IntendedInputTokens = k.intendedInput
	switch {
	case rec.ServerInputTokens >= 0:
		rec.InputTokens = rec.ServerInputTokens
		rec.InputSource = metrics.InputFromUsage
	case k.inputCounted:
		rec.InputSource = metrics.InputFromTokenizer
	default:
		rec.InputSource = metrics.InputFromTrace
	}
}

// sized returns q with its input_tokens reduced by what the target adds to every prompt
// (the Sizer's offset: special tokens, chat template), so that the text the Prompter fits
// plus that part is the trace's length as the target counts it. A later turn's carried
// conversation (convTokens > 0) already holds that part. Without a Sizer q is returned as is.
func (r *runner) sized(q *traces.Request, convTokens int) *traces.Request {
	if !r.sizer.measured() || r.sizer.Offset == 0 || convTokens > 0 || q.InputTokens < 1 || q.Prompt != "" {
		return q
	}
	c := *q
	c.InputTokens = r.sizer.target(q.InputTokens)
	return &c
}
