package loadgen

import "github.com/llmbench/llmbench/metrics"

// Speculative decoding as the server reports it per response (issue 38,
// metrics/speculative.go): llama.cpp's timings.draft_n and timings.draft_n_accepted (present
// only when the request decoded speculatively) and SGLang's meta_info (spec_verify_ct, the
// verification passes, with spec_draft_token_num and spec_accept_token_num where the server has
// them). A count that is not a plausible token count is ignored, never a reason to reject the
// response's usage.

// specFields are the speculative counts one parsed object carried (-1: absent).
type specFields struct {
	draft, accepted, passes int64
	src                     string // metrics.SpecFrom*; "" when none was seen
}

func (p *specFields) reset() { *p = specFields{draft: -1, accepted: -1, passes: -1} }

// specCount reads one count of a speculative field; a bad value reads -1.
func (s *scanner) specCount(name string) (int64, bool) {
	var bad string
	v, ok := s.count(name, &bad)
	if bad != "" {
		v = -1
	}
	return v, ok
}

// timingsSpec reads a timings member that is one of llama.cpp's draft counts; handled is false
// for any other key.
func (s *scanner) timingsSpec(f *chunkFields, key []byte) (ok, handled bool) {
	switch string(key) {
	case "draft_n":
		f.spec.draft, ok = s.specCount("timings.draft_n")
	case "draft_n_accepted":
		f.spec.accepted, ok = s.specCount("timings.draft_n_accepted")
	default:
		return false, false
	}
	f.spec.src = metrics.SpecFromTimings
	return ok, true
}

// metaInfo reads SGLang's meta_info object: the speculative counts, nothing else.
func (s *scanner) metaInfo(f *chunkFields) bool {
	if s.peek() != '{' {
		return s.skip()
	}
	return s.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "spec_verify_ct":
			f.spec.passes, ok = s.specCount("meta_info.spec_verify_ct")
			f.spec.src = metrics.SpecFromMetaInfo
		case "spec_draft_token_num":
			f.spec.draft, ok = s.specCount("meta_info.spec_draft_token_num")
		case "spec_accept_token_num":
			f.spec.accepted, ok = s.specCount("meta_info.spec_accept_token_num")
		default:
			return s.skip()
		}
		return ok
	})
}

// noteSpec keeps the latest speculative counts a response reported (llama.cpp and SGLang send
// them once, in the final object).
func (n *counter) noteSpec(f *chunkFields) {
	if f.spec.src == "" {
		return
	}
	n.spec.src = f.spec.src
	for _, p := range [...]struct{ dst, src *int64 }{{&n.spec.draft, &f.spec.draft}, {&n.spec.accepted, &f.spec.accepted}, {&n.spec.passes, &f.spec.passes}} {
		if *p.src >= 0 {
			*p.dst = *p.src
		}
	}
}

// settleSpec writes the response's speculative counts into its record: only a consistent set
// (no more accepted than drafted) is kept.
func (n *counter) settleSpec(rec *metrics.Record) {
	p := n.spec
	if p.src == "" || (p.draft >= 0 && p.accepted > p.draft) {
		return
	}
	if p.src == metrics.SpecFromTimings && (p.draft < 0 || p.accepted < 0) {
		return
	}
	if p.src == metrics.SpecFromMetaInfo && p.passes <= 0 {
		return
	}
	rec.SpecSource = p.src
	rec.SpecDraftTokens, rec.SpecAcceptedTokens, rec.SpecPasses = int(max(p.draft, 0)), int(max(p.accepted, 0)), int(max(p.passes, 0))
}
