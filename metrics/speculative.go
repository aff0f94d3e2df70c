package metrics

import (
	"fmt"
	"math"
)

// Speculative acceptance as the server sees it (issue 38, docs/speculative-decoding.md). A
// server that decodes speculatively verifies k draft tokens per pass and emits 1 + the accepted
// ones; the client sees those as bursts (TokensPerBurst). This block puts the server's own
// figures beside the client's: its counters over the measured window (vLLM's spec_decode_*,
// ServerSpeculative, filled by the runner from --scrape-metrics) and its per-response fields
// (llama.cpp's timings.draft_n / draft_n_accepted, SGLang's meta_info), and warns when the
// mean accepted length per pass disagrees with the client's tokens per burst beyond sampling
// error.

// Where a Record's speculative fields came from (Record.SpecSource).
const (
	SpecFromTimings  = "timings.draft_n"          // llama.cpp: draft_n, draft_n_accepted
	SpecFromMetaInfo = "meta_info.spec_verify_ct" // SGLang: spec_verify_ct (+ spec_draft_token_num, spec_accept_token_num)
)

// Speculative is summary.json's "speculative" block, present when the server reported its
// acceptance (counters or per-response fields).
type Speculative struct {
	// Server is the server's counters over the measured window (nil: none scraped).
	Server *ServerSpeculative `json:"server,omitempty"`
	// Responses sums the per-response fields of the successful requests (nil: none).
	Responses *ResponseSpeculative `json:"responses,omitempty"`
	// Client is the client's view: tokens per burst over the decode bursts (each request's
	// first and last bursts left out: the first is the prefill's token, the last may be cut
	// by max_tokens), the figure a pass of 1 + accepted tokens should match.
	Client ClientBursts `json:"client"`
	// Agree is "agree" or "disagree" when a server figure and enough client bursts were
	// there to compare (the server's counters preferred, else its per-response fields), ""
	// otherwise; Comparison says what was compared, in words.
	Agree      string `json:"agree,omitempty"`
	Comparison string `json:"comparison,omitempty"`
}

// ClientBursts is the client's tokens per decode burst: Bursts counted, their mean and
// standard error.
type ClientBursts struct {
	Bursts         int64   `json:"bursts"`
	TokensPerBurst float64 `json:"tokens_per_burst"`
	StdErr         float64 `json:"std_err"`
}

// ServerSpeculative is the increase of a server's speculative-decoding counters between two
// scrapes bracketing the measured window.
type ServerSpeculative struct {
	Backend string `json:"backend,omitempty"`
	// Available is true when the counters were found in two scrapes bracketing the window.
	Available bool   `json:"available"`
	Source    string `json:"source,omitempty"`
	// Drafts are verification passes (one per sequence per step), DraftTokens the draft
	// tokens proposed, Accepted those accepted.
	Drafts      float64 `json:"drafts"`
	DraftTokens float64 `json:"draft_tokens"`
	Accepted    float64 `json:"accepted_tokens"`
	// AcceptanceRate is Accepted / DraftTokens; MeanAcceptedLength is 1 + Accepted / Drafts,
	// the tokens a pass emits (vLLM's "mean acceptance length").
	AcceptanceRate     float64 `json:"acceptance_rate"`
	MeanAcceptedLength float64 `json:"mean_accepted_length"`
	WindowStartS       float64 `json:"window_start_s"`
	WindowEndS         float64 `json:"window_end_s"`
	Resets             int     `json:"resets,omitempty"`
	Note               string  `json:"note,omitempty"`
}

// ResponseSpeculative sums the speculative fields the responses carried.
type ResponseSpeculative struct {
	// Source is the field read (SpecFromTimings, SpecFromMetaInfo); Requests how many
	// successful requests reported it.
	Source   string `json:"source"`
	Requests int64  `json:"requests"`
	// DraftTokens and Accepted are summed over those requests (0 where the server gave no
	// draft count); Passes their verification passes (SGLang's spec_verify_ct; llama.cpp's
	// output tokens − accepted), OutputTokens their output tokens.
	DraftTokens  int64 `json:"draft_tokens"`
	Accepted     int64 `json:"accepted_tokens"`
	Passes       int64 `json:"passes"`
	OutputTokens int64 `json:"output_tokens"`
	// AcceptanceRate is Accepted / DraftTokens (0 when no draft tokens were reported);
	// MeanAcceptedLength is OutputTokens / Passes: tokens per pass, the prefill's first
	// token counted as a pass of its own.
	AcceptanceRate     float64 `json:"acceptance_rate"`
	MeanAcceptedLength float64 `json:"mean_accepted_length"`
}

// specTally accumulates a group's decode bursts and its responses' speculative fields.
type specTally struct {
	bursts, tok, tokSq int64
	resp               ResponseSpeculative
}

// noteDecodeBurst counts a burst that was neither its request's first nor its last.
func (t *specTally) noteDecodeBurst(n int64) {
	t.bursts++
	t.tok += n
	t.tokSq += n * n
}

// addResponse adds a successful record's speculative fields.
func (t *specTally) addResponse(r *Record) {
	if r.SpecSource == "" {
		return
	}
	p := &t.resp
	if p.Source == "" {
		p.Source = r.SpecSource
	}
	p.Requests++
	p.DraftTokens += int64(r.SpecDraftTokens)
	p.Accepted += int64(r.SpecAcceptedTokens)
	p.OutputTokens += int64(r.OutputTokens)
	if r.SpecPasses > 0 {
		p.Passes += int64(r.SpecPasses)
	} else if r.SpecSource == SpecFromTimings {
		p.Passes += int64(max(0, r.OutputTokens-r.SpecAcceptedTokens)) // each pass emits 1 + accepted
	}
}

// client is the tally's client view.
func (t *specTally) client() ClientBursts {
	c := ClientBursts{Bursts: t.bursts}
	if t.bursts == 0 {
		return c
	}
	n := float64(t.bursts)
	c.TokensPerBurst = float64(t.tok) / n
	if t.bursts > 1 {
		v := (float64(t.tokSq) - n*c.TokensPerBurst*c.TokensPerBurst) / (n - 1)
		c.StdErr = math.Sqrt(max(v, 0) / n)
	}
	return c
}

// block is the summary's speculative block from the tally alone (nil when no response
// reported its acceptance); AttachServerSpeculative adds the counters later.
func (t *specTally) block() *Speculative {
	if t.resp.Requests == 0 {
		return nil
	}
	r := t.resp
	if r.DraftTokens > 0 {
		r.AcceptanceRate = float64(r.Accepted) / float64(r.DraftTokens)
	}
	if r.Passes > 0 {
		r.MeanAcceptedLength = float64(r.OutputTokens) / float64(r.Passes)
	}
	sp := &Speculative{Responses: &r, Client: t.client()}
	sp.compare()
	return sp
}

// attach puts the tally's block and client view into sum, with the warning of a disagreement.
func (t *specTally) attach(sum *Summary) {
	sum.Speculative, sum.specClient = t.block(), t.client()
	if w := sum.Speculative.warning(); w != "" {
		sum.Warnings = append(sum.Warnings, w)
	}
}

// Agreement thresholds: the server's mean accepted length and the client's tokens per decode
// burst disagree when they differ by more than specAgreeZ standard errors of the client's mean
// and by more than specAgreeRel of the server's figure (bursts the network merged or split
// move the client's mean a little without being a disagreement worth a warning).
const (
	specAgreeZ     = 4.0
	specAgreeRel   = 0.05
	specMinBursts  = 30
	specWarnPrefix = "speculative decoding: "
)

// compare sets Agree and Comparison from the server figure (counters first) and the client's.
func (sp *Speculative) compare() {
	sp.Agree, sp.Comparison = "", ""
	var server float64
	var what string
	switch {
	case sp.Server != nil && sp.Server.Available && sp.Server.Drafts > 0:
		server, what = sp.Server.MeanAcceptedLength, "the server's counters ("+sp.Server.Source+")"
	case sp.Responses != nil && sp.Responses.MeanAcceptedLength > 0:
		server, what = sp.Responses.MeanAcceptedLength, "the responses' "+sp.Responses.Source
	default:
		return
	}
	c := sp.Client
	if c.Bursts < specMinBursts {
		sp.Comparison = fmt.Sprintf("%s: mean accepted length %.3f per pass; too few client decode bursts (%d) to compare", what, server, c.Bursts)
		return
	}
	diff := c.TokensPerBurst - server
	se := max(c.StdErr, 1e-9)
	sp.Agree = "agree"
	if math.Abs(diff) > specAgreeZ*se && math.Abs(diff) > specAgreeRel*server {
		sp.Agree = "disagree"
	}
	sp.Comparison = fmt.Sprintf("%s: mean accepted length %.3f per pass; client: %.3f tokens per decode burst ± %.3f (standard error, %d bursts); difference %+.3f (%.1f standard errors)",
		what, server, c.TokensPerBurst, c.StdErr, c.Bursts, diff, diff/se)
}

// warning is the summary warning for a disagreement ("" when none).
func (sp *Speculative) warning() string {
	if sp == nil || sp.Agree != "disagree" {
		return ""
	}
	return specWarnPrefix + "the server's acceptance and the client's bursts disagree beyond sampling error — " + sp.Comparison +
		" (the stream may batch or split passes, or the counters include other traffic; docs/speculative-decoding.md)"
}

// AttachServerSpeculative puts the server's counters over the window into s's speculative
// block (creating it) and compares again, replacing a previous warning of this block. A nil or
// unavailable server figure with no per-response figures leaves the block as it was, but a
// note is kept when the server's counters were looked for and not found.
func AttachServerSpeculative(s *Summary, server *ServerSpeculative) {
	if server == nil {
		return
	}
	if s.Speculative == nil {
		if !server.Available || server.Drafts == 0 {
			return // no speculative decoding seen on the server: nothing to show
		}
		s.Speculative = &Speculative{Client: s.specClient}
	}
	s.Speculative.Server = server
	s.Speculative.compare()
	kept := s.Warnings[:0]
	for _, w := range s.Warnings {
		if len(w) < len(specWarnPrefix) || w[:len(specWarnPrefix)] != specWarnPrefix {
			kept = append(kept, w)
		}
	}
	s.Warnings = kept
	if w := s.Speculative.warning(); w != "" {
		s.Warnings = append(s.Warnings, w)
	}
}

// SpecCounterPoint is one scrape of a server's speculative-decoding counters (cumulative): T in
// seconds from the run epoch.
type SpecCounterPoint struct {
	T, Drafts, DraftTokens, Accepted float64
}

// ServerSpeculativeDelta computes the counters' increase over [startS, endS] from scrapes pts
// (in time order) as ServerPrefixCacheDelta does: from the last scrape at or before startS to
// the first at or after endS, a counter that goes back counted as a reset.
func ServerSpeculativeDelta(backend, source string, pts []SpecCounterPoint, startS, endS float64) *ServerSpeculative {
	out := &ServerSpeculative{Backend: backend, Source: source}
	if len(pts) < 2 {
		out.Note = fmt.Sprintf("the speculative-decoding counters were read in %d scrape(s); two, at the start and end of the window, are needed for a per-run delta", len(pts))
		return out
	}
	i, j := 0, len(pts)-1
	for k, p := range pts {
		if p.T <= startS {
			i = k
		}
	}
	for k := len(pts) - 1; k >= 0; k-- {
		if pts[k].T >= endS {
			j = k
		}
	}
	if j <= i {
		out.Note = "no two scrapes of the speculative-decoding counters bracket the measured window"
		return out
	}
	out.Available = true
	out.WindowStartS, out.WindowEndS = pts[i].T, pts[j].T
	for k := i + 1; k <= j; k++ {
		prev, cur := pts[k-1], pts[k]
		if cur.Drafts < prev.Drafts || cur.DraftTokens < prev.DraftTokens || cur.Accepted < prev.Accepted {
			out.Resets++
			out.Drafts, out.DraftTokens, out.Accepted = out.Drafts+cur.Drafts, out.DraftTokens+cur.DraftTokens, out.Accepted+cur.Accepted
			continue
		}
		out.Drafts += cur.Drafts - prev.Drafts
		out.DraftTokens += cur.DraftTokens - prev.DraftTokens
		out.Accepted += cur.Accepted - prev.Accepted
	}
	if sum := out.Drafts + out.DraftTokens + out.Accepted; math.IsInf(sum, 0) || math.IsNaN(sum) {
		return &ServerSpeculative{Backend: backend, Source: source, Note: "the speculative-decoding counters' values are out of range"}
	}
	if out.DraftTokens > 0 {
		out.AcceptanceRate = out.Accepted / out.DraftTokens
	}
	if out.Drafts > 0 {
		out.MeanAcceptedLength = 1 + out.Accepted/out.Drafts
	}
	out.Note = "counter increase between the scrapes bracketing the measured window; it includes whatever else the server did between them"
	if out.Resets > 0 {
		out.Note += fmt.Sprintf("; the counters went back %d time(s) (server restarted?)", out.Resets)
	}
	return out
}
