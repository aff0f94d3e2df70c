package reports

import (
	"fmt"
	"strconv"

	"github.com/llmbench/llmbench/metrics"
)

// Speculative acceptance as the server reports it (issue 38, metrics/speculative.go), beside
// the client's tokens per decode burst, in every report.

// speculativeLine is the one-line form: the server's figures (counters, else per-response),
// the client's bursts and whether they agree.
func speculativeLine(sp *metrics.Speculative) string {
	var parts []string
	if sv := sp.Server; sv != nil {
		if sv.Available {
			parts = append(parts, fmt.Sprintf("server counters: acceptance %s, %s tokens per pass (%s passes, %s of %s draft tokens accepted)",
				fmtPct(sv.AcceptanceRate), fmtFixed(sv.MeanAcceptedLength, 2), fmtInt(int64(sv.Drafts)), fmtInt(int64(sv.Accepted)), fmtInt(int64(sv.DraftTokens))))
		} else if sv.Note != "" {
			parts = append(parts, "server counters: "+sv.Note)
		}
	}
	if r := sp.Responses; r != nil {
		s := "responses (" + r.Source + ", " + fmtInt(r.Requests) + "): "
		if r.DraftTokens > 0 {
			s += "acceptance " + fmtPct(r.AcceptanceRate) + ", "
		}
		parts = append(parts, s+fmtFixed(r.MeanAcceptedLength, 2)+" tokens per pass")
	}
	c := sp.Client
	parts = append(parts, fmt.Sprintf("client: %s tokens per decode burst ± %s (%s bursts)", fmtFixed(c.TokensPerBurst, 2), fmtFixed(c.StdErr, 3), fmtInt(c.Bursts)))
	line := ""
	for i, p := range parts {
		if i > 0 {
			line += " · "
		}
		line += p
	}
	switch sp.Agree {
	case "agree":
		line += " · agree"
	case "disagree":
		line += " · DISAGREE beyond sampling error"
	}
	return line
}

// speculativeTable is the HTML table of the block.
func speculativeTable(sp *metrics.Speculative) *table {
	t := &table{Caption: "Speculative decoding: the server's acceptance and the client's bursts", Numeric: true}
	if sv := sp.Server; sv != nil && sv.Available {
		t.add(txt("server acceptance rate (counters)"), keyed("speculative.server.acceptance_rate", fmtPct(sv.AcceptanceRate)))
		t.add(txt("server mean accepted length per pass"), keyed("speculative.server.mean_accepted_length", fmtFixed(sv.MeanAcceptedLength, 3)))
		t.add(txt("passes / draft tokens / accepted"), txt(fmtInt(int64(sv.Drafts))+" / "+fmtInt(int64(sv.DraftTokens))+" / "+fmtInt(int64(sv.Accepted))))
		t.add(txt("counters"), txt(sv.Source+", scraped at "+fmtSecondsSigned(sv.WindowStartS)+" and "+fmtSecondsSigned(sv.WindowEndS)))
	}
	if r := sp.Responses; r != nil {
		t.add(txt("responses reporting it"), txt(fmtInt(r.Requests)+" ("+r.Source+")"))
		if r.DraftTokens > 0 {
			t.add(txt("acceptance rate (responses)"), keyed("speculative.responses.acceptance_rate", fmtPct(r.AcceptanceRate)))
		}
		t.add(txt("mean accepted length per pass (responses)"), keyed("speculative.responses.mean_accepted_length", fmtFixed(r.MeanAcceptedLength, 3)))
	}
	c := sp.Client
	t.add(txt("client tokens per decode burst"), keyed("speculative.client.tokens_per_burst", fmtFixed(c.TokensPerBurst, 3)+" ± "+fmtFixed(c.StdErr, 3)))
	t.add(txt("client decode bursts"), txt(fmtInt(c.Bursts)))
	if sp.Agree != "" {
		cls := "good"
		if sp.Agree == "disagree" {
			cls = "bad"
		}
		t.add(txt("server and client"), classed(cls, sp.Agree))
	}
	if sp.Comparison != "" {
		t.add(txt("compared"), txt(sp.Comparison))
	}
	return t
}

// specArmFact is an ab arm's acceptance in a few words ("" when the arm has none).
func specArmFact(sp *metrics.Speculative) string {
	if sp == nil {
		return ""
	}
	if sv := sp.Server; sv != nil && sv.Available && sv.Drafts > 0 {
		return "acceptance " + fmtPct(sv.AcceptanceRate) + ", " + strconv.FormatFloat(sv.MeanAcceptedLength, 'f', 2, 64) + " tokens/pass (server counters)"
	}
	if r := sp.Responses; r != nil {
		s := strconv.FormatFloat(r.MeanAcceptedLength, 'f', 2, 64) + " tokens/pass (" + r.Source + ")"
		if r.DraftTokens > 0 {
			s = "acceptance " + fmtPct(r.AcceptanceRate) + ", " + s
		}
		return s
	}
	return ""
}
