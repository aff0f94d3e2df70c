package refengine

import "math"

// outPlan returns how a request's output reads: words, or an answer (answer.go) when the
// request may have one. Requests without tools, response_format or a question cost one nil
// check here.
func (e *Engine) outPlan(req *request, base uint64) *outPlan {
	p := &outPlan{base: base}
	if !req.question && req.tools == nil && req.format == nil {
		return p
	}
	frac := 0.0
	if req.chat {
		frac = e.cfg.ReasoningFraction
	}
	in := &answerInput{text: req.answerText(), chat: req.chat, tools: req.tools, toolChoice: req.toolChoice,
		format: req.format, promptToks: req.promptTokens, maxTokens: req.maxTokens,
		temperature: req.temperature, key: base}
	planAnswer(p, in, e.errs, frac)
	return p
}

// planAnswer fills p's answer for in, with the reasoning that precedes it: with reasoning
// fraction f, an answer of k tokens follows round(f/(1−f)·k) reasoning tokens, so that
// reasoning is the fraction f of the whole.
func planAnswer(p *outPlan, in *answerInput, m *errorModel, frac float64) {
	if m == nil {
		m = errorModelOff
	}
	in.lead = frac > 0
	if frac > 0 {
		in.maxTokens = max(1, int((1-frac)*float64(in.maxTokens)))
	}
	p.ans = buildAnswer(in, m)
	if p.ans != nil && frac > 0 {
		p.reasoning = int(math.Round(frac / (1 - frac) * float64(len(p.ans.toks))))
	}
}

// qualityInfo is Info.Quality: the spec, or "" when the model is off.
func qualityInfo(q Quality) string {
	if !q.On {
		return ""
	}
	return q.String()
}
