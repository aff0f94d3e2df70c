package reports

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// cdfTitle is the chart title of a comparison's overlaid CDF of family name (the registry's
// title; "" for a family the registry does not know).
func cdfTitle(name string) string {
	if f, ok := metrics.LookupFamily(name); ok {
		return f.Title
	}
	return ""
}

var unsafeID = regexp.MustCompile(`[^a-z0-9_-]+`)

// chartID turns a name from the data into a stable, safe element id.
func chartID(prefix, name string) string {
	return prefix + unsafeID.ReplaceAllString(strings.ToLower(name), "-")
}

var verdictColor = map[string]string{
	metrics.VerdictRegressed: colRed, metrics.VerdictWorse: colOrange, metrics.VerdictBetter: colGreen,
	metrics.VerdictUnchanged: colGray, metrics.VerdictNA: "#c0c4c8", metrics.VerdictChanged: colBlue,
	metrics.VerdictNotAssessable: "#c0c4c8", metrics.VerdictWithheld: colOrange,
}

var verdictClass = map[string]string{
	metrics.VerdictRegressed: "bad", metrics.VerdictWorse: "bad", metrics.VerdictBetter: "good",
	metrics.VerdictUnchanged: "muted", metrics.VerdictNA: "muted", metrics.VerdictChanged: "muted",
	metrics.VerdictNotAssessable: "muted", metrics.VerdictWithheld: "bad",
}

// WriteComparisonHTML writes the self-contained HTML report of a comparison: the regression
// verdict, both sides, the delta table with confidence intervals (also as a chart), overlaid
// CDFs, the per-request A vs B scatter when opts.Pairs is set, output equivalence and each
// side's summary. Identical inputs give identical bytes.
func WriteComparisonHTML(w io.Writer, c *metrics.Comparison, o HTMLOptions) error {
	if c == nil {
		return fmt.Errorf("reports: WriteComparisonHTML: nil comparison")
	}
	script, err := resolveECharts(&o)
	if err != nil {
		return err
	}
	p := comparisonPage(c, &o)
	p.Script = script
	return p.render(w)
}

func comparisonPage(c *metrics.Comparison, o *HTMLOptions) *page {
	title := o.Title
	if title == "" {
		title = "llmbench compare: " + c.Base.Label + " vs " + c.Cand.Label
	}
	p := &page{Title: title, Kind: "comparison", Headline: ComparisonHeadline(c), Good: !c.Regressed && c.CacheConfound == nil,
		Warnings: c.Warnings, Generator: "llmbench · schema " + c.Schema}
	p.Facts = []fact{{"base", sideText(c.Base)}, {"candidate", sideText(c.Cand)}, {"method", c.Method}}
	if c.Paired {
		p.Facts = append(p.Facts, fact{"matched request ids", fmtInt(int64(c.MatchedIDs))})
	}
	p.Facts = append(p.Facts, fact{"resamples", fmtInt(int64(c.Resamples))},
		fact{"confidence", fmtShort(c.Confidence*100) + "%"}, fact{"bootstrap seed", fmt.Sprint(c.Seed)})
	for _, th := range c.Thresholds {
		p.Facts = append(p.Facts, fact{"fail on", th.Text + " (" + th.Describe() + ")"})
	}
	p.Tiles = comparisonTiles(c)
	p.Sections = append(p.Sections, deltaSection(c))
	if sec, ok := cdfCompareSection(c); ok {
		p.Sections = append(p.Sections, sec)
	}
	if sec, ok := scatterSection(c, o.Pairs); ok {
		p.Sections = append(p.Sections, sec)
	}
	if c.Equivalence != nil {
		p.Sections = append(p.Sections, equivalenceSection(c.Equivalence))
	}
	if sec, ok := pairedQualitySection(c); ok {
		p.Sections = append(p.Sections, sec)
	}
	if sec, ok := modelPairSection(c); ok { // per-request model (issue 38)
		p.Sections = append(p.Sections, sec)
	}
	if c.Energy != nil {
		p.Sections = append(p.Sections, energyCompareSection(c.Energy)) // issue 39: energy.go
	}
	p.Sections = append(p.Sections, sidesSection(c))
	if len(c.ConfigDiff) > 0 {
		t := &table{Head: []string{"setting", "base: " + c.Base.Label, "cand: " + c.Cand.Label}}
		for _, d := range c.ConfigDiff {
			t.add(txt(d.Key), cell{Text: d.Base, Class: "wrap"}, cell{Text: d.Cand, Class: "wrap"})
		}
		p.Sections = append(p.Sections, section{ID: "config", Title: "Configuration differences",
			Intro:  "Every setting the run facts show that differs between the sides (the first run of each), so that a difference in setup is not mistaken for the change under test.",
			Blocks: []block{{Table: t}}})
	}
	return p
}

func comparisonTiles(c *metrics.Comparison) []tile {
	v := tile{Label: "Verdict", Value: "no regression", Class: "good wide", Key: "compare.verdict",
		Sub: fmt.Sprintf("%d metrics compared", len(c.Metrics))}
	if c.Regressed {
		v.Value, v.Class = "regression", "bad wide"
		v.Sub = strings.Join(c.Regressions, ", ")
	}
	if cc := c.CacheConfound; cc != nil {
		v.Value, v.Class = "confounded", "bad wide"
		v.Sub = fmt.Sprintf("prefix cache: %d verdicts withheld", len(cc.Withheld))
	}
	tiles := []tile{v}
	for _, name := range []string{"ttft.p95", "tpot.p95", "itl.p99", "e2e.p95", "throughput.requests_per_s", "goodput.fraction"} {
		for _, m := range c.Metrics {
			if m.Name != name {
				continue
			}
			tiles = append(tiles, tile{Label: tileLabel(m.Name), Value: deltaPctText(m), Key: "tile." + m.Name + ".delta_pct",
				Class: verdictClass[m.Verdict], Sub: fmtUnit(m.Base, m.Unit) + " → " + fmtUnit(m.Cand, m.Unit) + " " + unitSuffix(m.Unit)})
		}
	}
	return tiles
}

// tileLabel shortens a metric name for a headline tile.
func tileLabel(name string) string {
	switch name {
	case "throughput.requests_per_s":
		return "throughput"
	case "goodput.fraction":
		return "goodput"
	}
	head, tail, _ := strings.Cut(name, ".")
	head = strings.ReplaceAll(strings.ToUpper(head), "_", " ")
	return strings.TrimSpace(head + " " + tail)
}

func unitSuffix(unit string) string {
	if unit == "fraction" {
		return ""
	}
	return unit
}

func deltaSection(c *metrics.Comparison) section {
	spreads := false
	for _, m := range c.Metrics {
		spreads = spreads || m.BaseSpread != nil || m.CandSpread != nil
	}
	head := []string{"metric", "unit", "better", "base", "cand", "delta", "delta %", "CI of delta", "CI of delta %", "verdict", "rule"}
	if spreads {
		head = append(head, "base spread", "cand spread")
	}
	t := &table{Numeric: true, LeftCols: 3, Head: head}
	ch := &chartSpec{ID: "cmp-deltas", Title: "Change per metric with its confidence interval",
		Note:  "bar: change in % of base; whiskers: the CI bounds. Colour: red regressed, orange worse, green better, grey unchanged, blue changed (descriptive)",
		YName: "% change", Horizontal: true}
	var bars []any
	var lows, highs [][2]any
	for _, m := range c.Metrics {
		k := "delta." + m.Name + "."
		row := []cell{txt(m.Name), txt(m.Unit), txt(m.Better), keyed(k+"base", fmtUnit(m.Base, m.Unit)), keyed(k+"cand", fmtUnit(m.Cand, m.Unit)),
			txt(fmtSignedUnit(m.Delta, m.Unit)), keyed(k+"delta_pct", deltaPctText(m)),
			classed("wr", "["+fmtSignedUnit(m.CILow, m.Unit)+", "+fmtSignedUnit(m.CIHigh, m.Unit)+"]"),
			classed("wr", "["+pctOrNA(m.CILowPct, m.Base)+", "+pctOrNA(m.CIHighPct, m.Base)+"]"),
			cell{Text: m.Verdict, Key: k + "verdict", Class: verdictClass[m.Verdict]}, classed("wr", m.Threshold+mdeText(m))}
		if spreads {
			// The spread columns wrap so that the whole table fits its card (every column in view).
			row = append(row, classed("wr", spreadText(m.BaseSpread, m.Unit)), classed("wr", spreadText(m.CandSpread, m.Unit)))
		}
		t.add(row...)
		ch.XCats = append(ch.XCats, m.Name)
		if m.Base == 0 || m.Verdict == metrics.VerdictNA || !finite(m.DeltaPct) {
			bars = append(bars, "-")
			lows, highs = append(lows, [2]any{"-", m.Name}), append(highs, [2]any{"-", m.Name})
			continue
		}
		bars = append(bars, map[string]any{"value": rnd(m.DeltaPct), "itemStyle": map[string]any{"color": verdictColor[m.Verdict]}})
		lows = append(lows, [2]any{rnd(m.CILowPct), m.Name})
		highs = append(highs, [2]any{rnd(m.CIHighPct), m.Name})
	}
	ch.Series = []seriesSpec{
		{Name: "change %", Kind: "bar", Data: bars},
		{Name: "CI low %", Kind: "scatter", Data: lows, Color: "#202124", Symbol: 9},
		{Name: "CI high %", Kind: "scatter", Data: highs, Color: "#202124", Symbol: 9},
	}
	ch.Height = 120 + 26*len(c.Metrics)
	ch.Table = &table{Numeric: true, Head: []string{"metric", "change %", "CI low %", "CI high %", "verdict"}}
	for _, m := range c.Metrics {
		ch.Table.add(txt(m.Name), txt(deltaPctText(m)), txt(pctOrNA(m.CILowPct, m.Base)), txt(pctOrNA(m.CIHighPct, m.Base)), txt(m.Verdict))
	}
	intro := "Delta = candidate − base. A metric regresses only when its whole confidence interval lies beyond a --fail-on rule; " +
		"worse/better mean the interval excludes zero; unchanged means the data cannot tell the sides apart. " +
		"A descriptive metric (better: descriptive) describes the shape of delivery, such as tokens per chunk or per-token ITL percentiles, " +
		"which are 0 inside a multi-token chunk: when it moves it is marked changed, never better or worse."
	return section{ID: "deltas", Title: "Deltas", Intro: intro, Blocks: []block{{Table: t}, {Charts: []*chartSpec{ch}}}}
}

// metricCell is a registry metric read from a summary and formatted in its unit (n/a when the
// summary has no value for it).
func metricCell(s *metrics.Summary, name string) string {
	info, err := metrics.LookupMetric(name)
	if err != nil {
		return na
	}
	v, err := metrics.MetricValue(s, name)
	if err != nil {
		return na
	}
	return fmtUnit(v, info.Unit)
}

func pctOrNA(pct, base float64) string {
	if base == 0 {
		return na
	}
	return fmtSignedPct(pct / 100)
}

func spreadText(s *metrics.Spread, unit string) string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("%d runs %s–%s, CV %s%%", s.Runs, fmtUnit(s.Min, unit), fmtUnit(s.Max, unit), fmtFixed(s.CVPct, 1))
}

func cdfCompareSection(c *metrics.Comparison) (section, bool) {
	if len(c.CDFs) == 0 {
		return section{}, false
	}
	var keys []string
	seen := map[string]bool{}
	for _, f := range metrics.Families() {
		if _, ok := c.CDFs[f.Name]; ok {
			keys = append(keys, f.Name)
			seen[f.Name] = true
		}
	}
	for _, k := range sortedKeys(c.CDFs) {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	var charts []*chartSpec
	for _, k := range keys {
		pair := c.CDFs[k]
		title := cdfTitle(k)
		if title == "" {
			title = k
		}
		unit := pair.Unit
		if unit == "" {
			unit = "value"
		}
		ch := &chartSpec{ID: chartID("cmp-cdf-", k), Title: title, Note: "cumulative distribution, base vs candidate",
			XName: unit, YName: "fraction ≤ x", YMax: 1}
		if unit == "ms" && longTail([][]metrics.CDFPoint{pair.Base, pair.Cand}) {
			ch.XLog, ch.XName = true, "ms (log scale)"
		}
		ch.Series = []seriesSpec{cdfSeries(c.Base.Label+" (base)", colBlue, logSafe(pair.Base, ch.XLog), false),
			cdfSeries(c.Cand.Label+" (cand)", colOrange, logSafe(pair.Cand, ch.XLog), true)}
		ch.Table = cdfTable("", []string{"base", "cand"}, [][]metrics.CDFPoint{pair.Base, pair.Cand})
		charts = append(charts, ch)
	}
	return section{ID: "cdfs", Title: "Distributions, overlaid",
		Intro:  "Base solid, candidate dashed. A curve further right is slower; a gap that opens only near the top is a tail change.",
		Blocks: []block{{Charts: charts}}}, true
}

func scatterSection(c *metrics.Comparison, p *RequestPairs) (section, bool) {
	if p == nil || len(p.Keys) == 0 {
		return section{}, false
	}
	mk := func(id, title string, base, cand []float64) *chartSpec {
		ch := &chartSpec{ID: id, Title: title, Height: 380, XName: "base ms", YName: "candidate ms",
			Note: "one point per request (x: " + c.Base.Label + ", y: " + c.Cand.Label + "); above the diagonal the candidate was slower"}
		pts := xyPairs(base, cand)
		hi := 0.0
		for _, q := range pts {
			hi = max(hi, q[0], q[1])
		}
		ch.Series = []seriesSpec{
			{Name: "requests", Kind: "scatter", Data: pts, Color: colBlue, Symbol: 4},
			{Name: "no change", Data: [][2]float64{{0, 0}, {rnd(hi), rnd(hi)}}, Color: colGray, Dashed: true, Width: 1},
		}
		t := &table{Numeric: true, Head: []string{"request", "base ms", "cand ms", "change ms"}}
		for i, k := range p.Keys {
			t.add(txt(k), txt(fmtMs(base[i])), txt(fmtMs(cand[i])), txt(fmtSignedUnit(cand[i]-base[i], "ms")))
		}
		ch.Table = t
		return ch
	}
	intro := fmt.Sprintf("Requests matched by id on both sides: %s; plotted: %s", fmtInt(int64(p.Matched)), fmtInt(int64(len(p.Keys))))
	if len(p.Keys) < p.Matched {
		intro += " (a deterministic sample by id hash)"
	}
	return section{ID: "scatter", Title: "Per request, base vs candidate", Intro: intro + ".",
		Blocks: []block{{Charts: []*chartSpec{
			mk("cmp-scatter-ttft", "TTFT per request", p.BaseTTFT, p.CandTTFT),
			mk("cmp-scatter-e2e", "E2E per request", p.BaseE2E, p.CandE2E),
		}}}}, true
}

func equivalenceSection(eq *metrics.Equivalence) section {
	t := &table{Numeric: true}
	cls := "good"
	if eq.Mismatched > 0 {
		cls = "bad"
	}
	t.add(txt("requests compared"), txt(fmtInt(int64(eq.Compared))))
	t.add(txt("outputs that differ"), cell{Text: fmtInt(int64(eq.Mismatched)), Key: "equivalence.mismatched", Class: cls})
	t.add(txt("unchecked (no output hash on a side)"), txt(fmtInt(int64(eq.Unchecked))))
	blocks := []block{{Table: t}}
	if len(eq.MismatchIDs) > 0 {
		ids := append([]string(nil), eq.MismatchIDs...)
		sort.Strings(ids)
		blocks = append(blocks, block{Para: "Differing request ids: " + strings.Join(ids, ", ")})
	}
	return section{ID: "equivalence", Title: "Output equivalence",
		Intro:  "At temperature 0 both sides must produce identical text per request; speculative decoding changes speed, never output.",
		Blocks: blocks}
}

func sidesSection(c *metrics.Comparison) section {
	t := &table{Numeric: true, Head: []string{"measure", "base: " + c.Base.Label, "cand: " + c.Cand.Label}}
	type row struct {
		label string
		get   func(s *metrics.Summary) string
	}
	// A metric the comparison computed shows the comparison's value, the number the deltas
	// table shows (Compare reads exact per-request values; a Summary's percentiles carry
	// the histogram's 0.1% resolution), so the two tables agree; other measures come from
	// the side's summary.
	compared := map[string]metrics.MetricDelta{}
	for _, m := range c.Metrics {
		compared[m.Name] = m
	}
	value := func(s *metrics.Summary, name string) string {
		if m, ok := compared[name]; ok {
			switch s {
			case c.Base.Summary:
				return fmtUnit(m.Base, m.Unit)
			case c.Cand.Summary:
				return fmtUnit(m.Cand, m.Unit)
			}
		}
		return metricCell(s, name)
	}
	metric := func(label, name string) row {
		return row{label, func(s *metrics.Summary) string { return value(s, name) }}
	}
	// Latency families show p50 / p99 under the registry's label.
	pcts := func(fam string) row {
		f, _ := metrics.LookupFamily(fam)
		return row{f.Short + " p50 / p99 " + f.Unit, func(s *metrics.Summary) string {
			return value(s, fam+".p50") + " / " + value(s, fam+".p99")
		}}
	}
	rows := []row{
		{"headline", func(s *metrics.Summary) string { return Headline(s) }},
		{"requests", func(s *metrics.Summary) string { return fmtInt(int64(s.Requests.Total)) }},
		{"failed", func(s *metrics.Summary) string { return fmtInt(int64(s.Requests.Failed)) }},
		metric("requests / s", "throughput.requests_per_s"),
		metric("output tokens / s", "throughput.output_tokens_per_s"),
		{"within SLO", func(s *metrics.Summary) string { return goodputCell(s.Goodput) }},
		pcts("ttft"), pcts("tpot"), pcts("itl"), pcts("itl_chunk"), pcts("itl_burst"), pcts("e2e"),
		{"stall threshold", func(s *metrics.Summary) string { return thresholdText(s.Stalls) }},
		metric("requests with a stall", "stalls.requests_fraction"),
		metric("fluidity index ≥ 0.9", "fluidity.fraction_ge_0_9"),
		metric("tokens per chunk mean", "tokens_per_chunk.mean"),
		metric("tokens per burst mean", "tokens_per_burst.mean"),
		{"model", func(s *metrics.Summary) string { return s.Run.Model }},
		{"endpoint", func(s *metrics.Summary) string { return s.Run.Endpoint }},
		{"mode", func(s *metrics.Summary) string { return modeLabel(s.Run) }},
	}
	for _, r := range rows {
		b, cd := na, na
		if c.Base.Summary != nil {
			b = r.get(c.Base.Summary)
		}
		if c.Cand.Summary != nil {
			cd = r.get(c.Cand.Summary)
		}
		cls := ""
		switch r.label {
		case "headline", "model", "endpoint":
			cls = "wrap"
		}
		t.add(txt(r.label), cell{Text: b, Class: cls}, cell{Text: cd, Class: cls})
	}
	return section{ID: "sides", Title: "Each side", Intro: "Pooled steady-state summaries of each side, computed with the same SLOs, stall threshold and fluidity deadlines.",
		Blocks: []block{{Table: t}}}
}
