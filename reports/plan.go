package reports

import (
	"fmt"
	"io"
	"sort"
	"strconv"
)

// Plan is a deployment search to render (llmbench plan): the question, the chosen deployment
// and every candidate. Package plan fills it; this file only lays it out.
type Plan struct {
	Title    string
	Headline string
	Good     bool
	// Facts head the page (trace, SLO, target, search figures), in order.
	Facts    [][2]string
	Target   float64
	Currency string
	// Rows are every candidate, cheapest first.
	Rows      []PlanRow
	Generator string
}

// PlanRow is one candidate deployment.
type PlanRow struct {
	Deployment   string
	GPUs         int
	PricePerHour float64
	// CostPerMTokens is 0 when not known (a simulation stopped early, or a shape ruled out).
	CostPerMTokens float64
	Goodput        float64
	// Bound marks Goodput as an upper bound (the simulation stopped once the target was out of
	// reach).
	Bound bool
	// Verdict is "chosen", "meets" (the fewest replicas of its shape that do), "meets, not the
	// fewest", "misses" or "ruled out".
	Verdict string
	Note    string
	// TokensPerJoule is the output tokens per joule of modelled GPU energy (issue 39); 0 when
	// not known.
	TokensPerJoule float64
}

func (r *PlanRow) tokensPerJouleText() string {
	if r.TokensPerJoule <= 0 {
		return "–"
	}
	return fmtRate(r.TokensPerJoule)
}

func (r *PlanRow) goodputText() string {
	if r.Verdict == "ruled out" {
		return "–"
	}
	if r.Bound {
		return "≤ " + fmtPct(r.Goodput)
	}
	return fmtPct(r.Goodput)
}

func (r *PlanRow) costText(currency string) string {
	if r.CostPerMTokens <= 0 {
		return "–"
	}
	return fmtMoney(r.CostPerMTokens, currency)
}

// terminalRows are the rows the terminal shows, cheapest first: the chosen deployment, up to
// limit runner-ups that meet the target, and up to limit of the cheaper deployments that
// missed it (those nearest the choice). With no choice, the 2·limit highest goodputs.
func (p *Plan) terminalRows(limit int) []PlanRow {
	chosen := -1
	for i, r := range p.Rows {
		if r.Verdict == "chosen" {
			chosen = i
		}
	}
	keep := make([]bool, len(p.Rows))
	if chosen < 0 {
		idx := make([]int, 0, len(p.Rows))
		for i, r := range p.Rows {
			if r.Verdict != "ruled out" {
				idx = append(idx, i)
			}
		}
		sort.SliceStable(idx, func(a, b int) bool { return p.Rows[idx[a]].Goodput > p.Rows[idx[b]].Goodput })
		for _, i := range idx[:min(len(idx), 2*limit)] {
			keep[i] = true
		}
	} else {
		keep[chosen] = true
		for i, n := chosen-1, 0; i >= 0 && n < limit; i-- {
			if p.Rows[i].Verdict == "misses" {
				keep[i] = true
				n++
			}
		}
		for i, n := chosen+1, 0; i < len(p.Rows) && n < limit; i++ {
			if p.Rows[i].Verdict == "meets" {
				keep[i] = true
				n++
			}
		}
	}
	var out []PlanRow
	for i, k := range keep {
		if k {
			out = append(out, p.Rows[i])
		}
	}
	return out
}

// WritePlanTerminal prints the search: the headline, its facts, and a table of the chosen
// deployment, its runner-ups and the cheaper deployments that missed the target.
func WritePlanTerminal(w io.Writer, p *Plan) error {
	if p == nil {
		return fmt.Errorf("reports: WritePlanTerminal: nil plan")
	}
	e := &errWriter{w: w}
	for _, line := range wrap(termSafe(p.Headline), termWidth) {
		e.printf("%s\n", line)
	}
	for _, f := range p.Facts {
		e.field(termSafe(f[0]), f[1])
	}
	rows := p.terminalRows(8)
	e.printf("\n%-34s%6s%12s%12s%8s%11s  %s\n", "deployment", "GPUs", "per hour", "per Mtok", "tok/J", "goodput", "verdict")
	for _, r := range rows {
		e.printf("%-34s%s%s%s%s%s  %s\n", clip(termSafe(r.Deployment), 33), col(6, strconv.Itoa(r.GPUs)),
			col(12, fmtMoney(r.PricePerHour, p.Currency)), col(12, r.costText(p.Currency)), col(8, r.tokensPerJouleText()), col(11, r.goodputText()), termSafe(r.Verdict))
	}
	if n := len(p.Rows) - len(rows); n > 0 {
		e.printf("(%d more candidates in --format json and -o plan.html)\n", n)
	}
	return e.err
}

// WritePlanHTML writes the self-contained page of a plan: the headline and facts, a chart of
// every simulated deployment's goodput against its price per hour with the target marked, and
// a table of every candidate (the chart's numbers included). Identical inputs give identical
// bytes.
func WritePlanHTML(w io.Writer, p *Plan, o HTMLOptions) error {
	if p == nil {
		return fmt.Errorf("reports: WritePlanHTML: nil plan")
	}
	script, err := resolveECharts(&o)
	if err != nil {
		return err
	}
	pg := &page{Title: p.Title, Kind: "plan", Headline: p.Headline, Good: p.Good, Generator: p.Generator, Script: script}
	if pg.Title == "" {
		pg.Title = "llmbench plan"
	}
	for _, f := range p.Facts {
		pg.Facts = append(pg.Facts, fact{f[0], f[1]})
	}
	all := &table{ID: "candidates", Numeric: true, LastLeft: true,
		Head: []string{"deployment", "GPUs", "per hour", "per million tokens", "output tokens per joule", "goodput", "verdict", "note"}}
	var meets, misses [][2]float64
	var chosen [][2]float64
	maxPrice := 0.0
	for _, r := range p.Rows {
		cls := ""
		switch r.Verdict {
		case "chosen":
			cls = "good"
			chosen = append(chosen, [2]float64{rnd(r.PricePerHour), rnd(100 * r.Goodput)})
		case "meets", "meets, not the fewest":
			meets = append(meets, [2]float64{rnd(r.PricePerHour), rnd(100 * r.Goodput)})
		case "misses":
			cls = "bad"
			misses = append(misses, [2]float64{rnd(r.PricePerHour), rnd(100 * r.Goodput)})
		}
		if r.Verdict != "ruled out" {
			maxPrice = max(maxPrice, r.PricePerHour)
		}
		all.add(txt(r.Deployment), txt(strconv.Itoa(r.GPUs)), txt(fmtMoney(r.PricePerHour, p.Currency)), txt(r.costText(p.Currency)),
			txt(r.tokensPerJouleText()), txt(r.goodputText()), classed(cls, r.Verdict), classed("wrap", r.Note))
	}
	series := []seriesSpec{
		{Name: "meets the target", Kind: "scatter", Data: meets, Color: colGreen, Symbol: 9},
		{Name: "misses (≤: stopped early)", Kind: "scatter", Data: misses, Color: colRed, Symbol: 9},
		{Name: "chosen", Kind: "scatter", Data: chosen, Color: colBlue, Symbol: 16},
		{Name: "target", Data: [][2]float64{{0, rnd(100 * p.Target)}, {rnd(maxPrice), rnd(100 * p.Target)}}, Color: colGray, Dashed: true, Width: 1.5},
	}
	chart := &chartSpec{ID: "plan-goodput-price", Title: "Goodput against price",
		Note:  "every simulated deployment: goodput (share of requests meeting the SLO) against its price per hour; the cheapest point at or above the target line is chosen",
		XName: "price per hour (" + p.Currency + ")", YName: "goodput %", YMax: 100, Series: series, Table: all}
	pg.Sections = append(pg.Sections, section{ID: "candidates", Title: "Candidates",
		Intro:  "Cheapest first. A goodput marked ≤ is an upper bound: the simulation stopped once the target was out of reach.",
		Blocks: []block{{Charts: []*chartSpec{chart}}}})
	return pg.render(w)
}
