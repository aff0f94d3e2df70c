package judge

import (
	"github.com/llmbench/llmbench/metrics"
)

// RubricSummary counts rubric verdicts: the pass rate of the parsed ones with the percentile
// bootstrap interval of package metrics, and the cost.
func RubricSummary(o Options, vs []Verdict, u Usage) *metrics.JudgeSummary {
	s := &metrics.JudgeSummary{Endpoint: o.ShownEndpoint(), Model: o.Model, Mode: "rubric", Judged: len(vs),
		PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Calls: u.Calls}
	for _, v := range vs {
		switch {
		case v.Err != "":
			s.Errors++
		case v.Pass:
			s.Passed++
		}
	}
	if n := s.Judged - s.Errors; n > 0 {
		s.PassRate = float64(s.Passed) / float64(n)
		s.CILow, s.CIHigh = metrics.PassRateInterval(s.Passed, n, metrics.QualityResamples, metrics.QualityConfidence)
	}
	return s
}

// PairSummary counts pairwise verdicts. Only consistent pairs count: PreferB is the mean of
// +1 (B won both orders), -1 (A won both) and 0 (tie in both) over them, with the percentile
// bootstrap interval of that mean; inconsistent pairs (the verdict followed the position)
// and failed calls count for neither side.
func PairSummary(o Options, ps []PairVerdict, u Usage) *metrics.JudgeSummary {
	s := &metrics.JudgeSummary{Endpoint: o.ShownEndpoint(), Model: o.Model, Mode: "pairwise", Judged: len(ps),
		PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Calls: u.Calls}
	var scores []float64
	for _, p := range ps {
		switch {
		case p.Err != "":
			s.Errors++
		case !p.Consistent:
			s.Inconsistent++
		case p.Winner == WinnerA:
			s.WinsA++
			scores = append(scores, -1)
		case p.Winner == WinnerB:
			s.WinsB++
			scores = append(scores, 1)
		default:
			s.Ties++
			scores = append(scores, 0)
		}
	}
	if len(scores) > 0 {
		var sum float64
		for _, x := range scores {
			sum += x
		}
		s.PreferB = sum / float64(len(scores))
		s.PreferBLow, s.PreferBHigh = metrics.MeanInterval(scores, metrics.QualityResamples, metrics.QualityConfidence, uint64(len(scores)))
	}
	return s
}
