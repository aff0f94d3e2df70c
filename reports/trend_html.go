package reports

import (
	"fmt"
	"io"
	"strconv"
)

// Trend is a results history to render as a trend page (llmbench history report): one chart
// per metric and configuration over runs, change points marked. The change points are found by
// package history; this file only draws them.
type Trend struct {
	Title    string
	Headline string
	Good     bool
	// Facts head the page (store, runs, detection settings), in order.
	Facts     [][2]string
	Series    []TrendSeries
	Generator string
}

// TrendSeries is one metric of one configuration.
type TrendSeries struct {
	Metric string
	Unit   string
	// Better is "lower", "higher" or "descriptive".
	Better string
	Config string
	Runs   []TrendRun
	// Level is the mean of the segment each run belongs to (the step the change points cut),
	// same length as Runs.
	Level   []float64
	Changes []TrendChange
}

// TrendRun is one run's value.
type TrendRun struct {
	ID    int64
	Start string
	Value float64
	// Link is where the run's results can be opened (its report.html or directory); empty
	// when they are not reachable from where the page was written.
	Link string
	// Lo and Hi are the run's own interval (its within-run noise) when Interval is set.
	Interval bool
	Lo, Hi   float64
}

// TrendChange is one change point: Index is the first run after it.
type TrendChange struct {
	Index int
	// Kind is "regression", "improvement", "change", prefixed with "weak " when weak.
	Kind string
	Bad  bool
	// Summary says it in one line: before → after, magnitude, p.
	Summary string
	// Changed lists the configuration differences at the change.
	Changed string
}

// WriteTrendHTML writes the self-contained trend page: a table of every change point, then per
// configuration one chart per metric (each run's value, the level between change points, the
// change points marked) with a table of the same numbers and links to each run's results.
// Identical inputs give identical bytes.
func WriteTrendHTML(w io.Writer, t *Trend, o HTMLOptions) error {
	if t == nil {
		return fmt.Errorf("reports: WriteTrendHTML: nil trend")
	}
	script, err := resolveECharts(&o)
	if err != nil {
		return err
	}
	p := &page{Title: t.Title, Kind: "trend", Headline: t.Headline, Good: t.Good, Generator: t.Generator, Script: script}
	if p.Title == "" {
		p.Title = "llmbench history"
	}
	for _, f := range t.Facts {
		p.Facts = append(p.Facts, fact{f[0], f[1]})
	}
	changes := &table{ID: "changes", Numeric: true, LeftCols: 3, LastLeft: true,
		Head: []string{"metric", "configuration", "change", "first run after", "before → after", "what changed"}}
	for _, s := range t.Series {
		for _, c := range s.Changes {
			cls := ""
			if c.Bad {
				cls = "bad"
			}
			run := ""
			if c.Index >= 0 && c.Index < len(s.Runs) {
				run = "run " + strconv.FormatInt(s.Runs[c.Index].ID, 10) + " (" + s.Runs[c.Index].Start + ")"
			}
			changes.add(txt(s.Metric), txt(s.Config), classed(cls, c.Kind), txt(run), txt(c.Summary), classed("wrap", orDash(c.Changed)))
		}
	}
	if len(changes.Rows) == 0 {
		changes.add(txt("–"), txt("–"), txt("no change"), txt(""), txt(""), txt(""))
	}
	p.Sections = append(p.Sections, section{ID: "change-points", Title: "Change points",
		Intro:  "Every change found, newest configuration last. A weak change needs more runs to confirm.",
		Blocks: []block{{Table: changes}}})
	// One section per configuration, in order of first appearance.
	var order []string
	byConfig := map[string][]int{}
	for i, s := range t.Series {
		if _, ok := byConfig[s.Config]; !ok {
			order = append(order, s.Config)
		}
		byConfig[s.Config] = append(byConfig[s.Config], i)
	}
	for ci, cfg := range order {
		var charts []*chartSpec
		for _, i := range byConfig[cfg] {
			charts = append(charts, trendChart(fmt.Sprintf("trend-%d-%d", ci, i), &t.Series[i], o.maxPoints()))
		}
		p.Sections = append(p.Sections, section{ID: fmt.Sprintf("config-%d", ci), Title: "Configuration " + strconv.Itoa(ci+1),
			Intro: cfg, Blocks: []block{{Charts: charts}}})
	}
	return p.render(w)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// trendChart draws one series: values per run (category axis of run ids), the level between
// change points as a step, and the first run after each change as a marked point.
func trendChart(id string, s *TrendSeries, maxPoints int) *chartSpec {
	idx := trendPlotted(s, maxPoints)
	d := trendRows(s, idx)
	series := []seriesSpec{
		{Name: s.Metric, Data: d.values, Color: colBlue, Symbol: 5},
		{Name: "level between changes", Data: d.level, Color: colGray, Dashed: true, Width: 1.5},
	}
	if d.withIv {
		series = append(series,
			seriesSpec{Name: "run's own interval (low)", Data: d.ivLo, Color: colTeal, Dashed: true, Width: 1},
			seriesSpec{Name: "run's own interval (high)", Data: d.ivHi, Color: colTeal, Dashed: true, Width: 1})
	}
	if len(d.marks) > 0 {
		series = append(series, seriesSpec{Name: "change point (first run after)", Kind: "scatter", Data: d.marks, Color: colRed, Symbol: 14})
	}
	return &chartSpec{ID: id, Title: s.Metric, Note: trendNote(s, len(idx)), XName: "run", YName: s.Unit,
		XCats: d.cats, Series: series, Table: d.tbl}
}

// trendPlotted is the indexes of the runs plotted, in order: every run, or past maxPoints an
// LTTB selection plus the runs on both sides of every change.
func trendPlotted(s *TrendSeries, maxPoints int) []int {
	n := len(s.Runs)
	keep := make([]bool, n)
	idx := make([]int, 0, n)
	if n > maxPoints {
		xs := make([]float64, n)
		ys := make([]float64, n)
		for i, r := range s.Runs {
			xs[i], ys[i] = float64(i), r.Value
		}
		for _, i := range LTTB(xs, ys, maxPoints) {
			keep[i] = true
		}
		for _, c := range s.Changes {
			for _, j := range []int{c.Index - 1, c.Index} {
				if j >= 0 && j < n {
					keep[j] = true
				}
			}
		}
	} else {
		for i := range keep {
			keep[i] = true
		}
	}
	for i, k := range keep {
		if k {
			idx = append(idx, i)
		}
	}
	return idx
}

// trendData is a trend chart's plotted data and its table, one entry per plotted run
// ("-" where a run has no interval or level).
type trendData struct {
	cats                      []string
	values, level, ivLo, ivHi []any
	marks                     [][2]any // (position, value) of each run that starts a change
	withIv                    bool     // some plotted run has its own interval
	tbl                       *table
}

// trendRows lays out the runs idx of s as chart data and as the table's rows.
func trendRows(s *TrendSeries, idx []int) trendData {
	changeAt := map[int]TrendChange{}
	for _, c := range s.Changes {
		changeAt[c.Index] = c
	}
	d := trendData{cats: make([]string, 0, len(idx)), values: make([]any, 0, len(idx)), level: make([]any, 0, len(idx))}
	for _, i := range idx {
		d.withIv = d.withIv || s.Runs[i].Interval
	}
	head := []string{"run", "start", s.Metric + " (" + s.Unit + ")", "level", "change"}
	if d.withIv {
		head = []string{"run", "start", s.Metric + " (" + s.Unit + ")", "run's own 95% interval", "level", "change"}
	}
	d.tbl = &table{Numeric: true, LastLeft: true, Head: head}
	for pos, i := range idx {
		r := s.Runs[i]
		d.cats = append(d.cats, "#"+strconv.FormatInt(r.ID, 10))
		d.values = append(d.values, rnd(r.Value))
		ivCell := "–"
		if r.Interval {
			d.ivLo, d.ivHi = append(d.ivLo, rnd(r.Lo)), append(d.ivHi, rnd(r.Hi))
			ivCell = fmtShort(r.Lo) + " – " + fmtShort(r.Hi)
		} else {
			d.ivLo, d.ivHi = append(d.ivLo, "-"), append(d.ivHi, "-")
		}
		lv := "–"
		if i < len(s.Level) && finite(s.Level[i]) {
			d.level = append(d.level, rnd(s.Level[i]))
			lv = fmtShort(s.Level[i])
		} else {
			d.level = append(d.level, "-")
		}
		c, changed := changeAt[i]
		if changed {
			d.marks = append(d.marks, [2]any{pos, rnd(r.Value)})
		}
		runCell := txt("#" + strconv.FormatInt(r.ID, 10))
		runCell.Href = r.Link
		noteCell := trendNoteCell(c, changed)
		if d.withIv {
			d.tbl.add(runCell, txt(r.Start), txt(fmtShort(r.Value)), txt(ivCell), txt(lv), noteCell)
		} else {
			d.tbl.add(runCell, txt(r.Start), txt(fmtShort(r.Value)), txt(lv), noteCell)
		}
	}
	return d
}

// trendNoteCell is the table's change cell of a run: the change it starts, if any (changed),
// marked bad when the change is a regression. A long note wraps inside the card.
func trendNoteCell(c TrendChange, changed bool) cell {
	note := ""
	if changed {
		note = c.Kind + ": " + c.Summary
		if c.Changed != "" {
			note += "; changed: " + c.Changed
		}
	}
	noteCell := classed("wr", note)
	if changed && c.Bad {
		noteCell.Class = "wr bad"
	}
	return noteCell
}

// trendNote is the chart's note: the metric and which way is better, every change, and how
// many of the runs are plotted when not all are.
func trendNote(s *TrendSeries, plotted int) string {
	n := len(s.Runs)
	better := "lower is better"
	switch s.Better {
	case "higher":
		better = "higher is better"
	case "descriptive":
		better = "descriptive"
	}
	note := s.Metric + " per run (" + better + ")"
	for _, c := range s.Changes {
		if c.Index >= 0 && c.Index < n {
			note += fmt.Sprintf("; %s at run %d: %s", c.Kind, s.Runs[c.Index].ID, c.Summary)
		}
	}
	if plotted < n {
		note += fmt.Sprintf("; %d of %d runs plotted (LTTB), every change kept", plotted, n)
	}
	return note
}
