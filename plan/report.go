package plan

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/reports"
)

// Report is r laid out for reports (terminal and HTML): trace is the trace's name as the user
// gave it (may be empty), generator the program and version for the page's footer.
func (r *Result) Report(trace, generator string) *reports.Plan {
	p := &reports.Plan{Title: "llmbench plan", Target: r.Target, Currency: r.Currency, Generator: generator}
	if r.Best != nil {
		b := r.Best
		p.Good = true
		p.Headline = fmt.Sprintf("cheapest deployment with goodput ≥ %s: %s at %s %s per hour (%s %s per million tokens), goodput %s",
			pct(r.Target), b.Name(), money(b.PricePerHour), r.Currency, money(b.CostPerMTokens), r.Currency, pct(b.Goodput))
		if r.Objective == ObjectiveTokensPerJoule {
			p.Headline = energyHeadline(r)
		}
	} else {
		p.Headline = fmt.Sprintf("no deployment searched reaches goodput %s: widen the search (--gpus, --tp, --replicas) or relax the SLO", pct(r.Target))
	}
	if trace != "" {
		p.Facts = append(p.Facts, [2]string{"Trace", fmt.Sprintf("%s · %s requests · %s tokens (input + output)", trace, grouped(int64(r.Requests)), grouped(r.Tokens))})
	}
	var slo []string
	classes := make([]string, 0, len(r.SLO))
	for c := range r.SLO {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, c := range classes {
		if c == "" {
			if r.SLO[c] != "" {
				slo = append(slo, r.SLO[c])
			}
			continue
		}
		slo = append(slo, c+": "+r.SLO[c])
	}
	p.Facts = append(p.Facts,
		[2]string{"SLO", strings.Join(slo, " · ") + fmt.Sprintf(" · target goodput %s", pct(r.Target))},
		[2]string{"Model", fmt.Sprintf("%s · router %s", r.Model, r.Router)},
		[2]string{"Search", fmt.Sprintf("%d deployments in %.1f s: %d simulated (%d stopped once the target was out of reach), %d shapes ruled out",
			r.Searched, r.ElapsedS, r.Simulated, r.StoppedEarly, r.RuledOut)})
	for i := range r.Candidates {
		c := &r.Candidates[i]
		row := reports.PlanRow{Deployment: c.Name(), GPUs: c.GPUs, PricePerHour: c.PricePerHour, CostPerMTokens: c.CostPerMTokens,
			Goodput: c.Goodput, Bound: c.Stopped, Note: c.Note, TokensPerJoule: c.TokensPerJoule}
		switch {
		case c == r.Best:
			row.Verdict = "chosen"
		case c.Replicas == 0:
			row.Verdict = "ruled out"
		case c.Meets && c.Fewest:
			row.Verdict = "meets"
		case c.Meets:
			row.Verdict = "meets, not the fewest"
		default:
			row.Verdict = "misses"
		}
		p.Rows = append(p.Rows, row)
	}
	return p
}

// WriteTerminal prints r as reports.WritePlanTerminal lays it out.
func (r *Result) WriteTerminal(w io.Writer, trace string) error {
	return reports.WritePlanTerminal(w, r.Report(trace, ""))
}

// WriteHTML writes r's self-contained page.
func (r *Result) WriteHTML(w io.Writer, trace, generator string, o reports.HTMLOptions) error {
	return reports.WritePlanHTML(w, r.Report(trace, generator), o)
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func money(v float64) string {
	if v > 0 && v < 1 {
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// grouped writes n with thousands separators.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
