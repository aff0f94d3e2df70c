package reports

import (
	"fmt"
	"io"
	"strconv"

	"github.com/llmbench/llmbench/metrics"
)

// Pareto is the page of a sweep across server configurations (runner.ServerSweep): each
// configuration's outcome, and its load points that met the SLO as throughput per GPU against
// throughput per user, the frontier drawn and the dominated points greyed.
type Pareto struct {
	SLO     string
	Target  float64
	Configs []ParetoConfig
	// Points are every configuration's points, Dominated set (metrics.MarkDominated).
	Points []metrics.ParetoPoint
}

// ParetoConfig is one configuration as the page lists it; Dir and Log are relative to the
// page.
type ParetoConfig struct {
	Name, Command, Error, Dir, Log string
	GPUs, Capacity                 float64
}

// WriteParetoHTML writes the self-contained page of a server-configuration sweep. Identical
// inputs give identical bytes.
func WriteParetoHTML(w io.Writer, p *Pareto, o HTMLOptions) error {
	if p == nil {
		return fmt.Errorf("reports: WriteParetoHTML: nil result")
	}
	script, err := resolveECharts(&o)
	if err != nil {
		return err
	}
	frontier := 0
	for _, q := range p.Points {
		if !q.Dominated {
			frontier++
		}
	}
	pg := &page{Title: "llmbench server sweep", Kind: "server sweep", Script: script, Good: frontier > 0,
		Headline: fmt.Sprintf("%d server configurations, %d load points within the SLO, %d on the frontier", len(p.Configs), len(p.Points), frontier)}
	pg.Facts = append(pg.Facts, fact{"SLO", p.SLO}, fact{"goodput target", fmtFixed(100*p.Target, 0) + "%"})
	for _, c := range p.Configs {
		if c.Error != "" {
			pg.Warnings = append(pg.Warnings, c.Name+": "+c.Error+" (log: "+c.Log+")")
		}
	}
	pg.Sections = append(pg.Sections, section{ID: "frontier", Title: "Frontier",
		Intro:  "Each configuration's load points that met the SLO: output tokens per second per GPU against output tokens per second each user saw while decoding (1000 / TPOT p50). A point another beats on both axes is dominated (grey); the rest are the frontier.",
		Blocks: []block{{Charts: []*chartSpec{paretoChart(p)}}}})
	pg.Sections = append(pg.Sections, section{ID: "configs", Title: "Configurations", Blocks: []block{{Tables: []*table{paretoConfigs(p)}}}})
	return pg.render(w)
}

// paretoChart draws the points: one colour per configuration for the frontier's, grey for the
// dominated, a dashed line along the frontier; its table has every point.
func paretoChart(p *Pareto) *chartSpec {
	tab := &table{ID: "pareto-points", Numeric: true, LeftCols: 1, LastLeft: true,
		Head: []string{"configuration", "load", "output tok/s per GPU", "output tok/s per user", "frontier"}}
	byConfig := map[string][][2]float64{}
	var order []string
	var dominated, line [][2]float64
	for _, q := range p.Points {
		xy := [2]float64{rnd(q.PerUser), rnd(q.PerGPU)}
		on := "yes"
		if q.Dominated {
			on = "dominated"
			dominated = append(dominated, xy)
		} else {
			if _, ok := byConfig[q.Config]; !ok {
				order = append(order, q.Config)
			}
			byConfig[q.Config] = append(byConfig[q.Config], xy)
			line = append(line, xy)
		}
		tab.add(txt(q.Config), txt(strconv.FormatFloat(q.Load, 'g', 4, 64)), txt(fmtFixed(q.PerGPU, 1)), txt(fmtFixed(q.PerUser, 1)), txt(on))
	}
	var series []seriesSpec
	if len(line) > 1 {
		series = append(series, seriesSpec{Name: "frontier", Data: line, Color: colGray, Dashed: true, Width: 1.5})
	}
	for i, name := range order {
		series = append(series, seriesSpec{Name: name, Kind: "scatter", Data: byConfig[name], Color: sampleColors[i%len(sampleColors)], Symbol: 11})
	}
	series = append(series, seriesSpec{Name: "dominated", Kind: "scatter", Data: dominated, Color: "#c4c7c5", Symbol: 8})
	return &chartSpec{ID: "pareto-frontier", Title: "Throughput per GPU against throughput per user",
		Note:  "points within the SLO; coloured: the frontier, grey: dominated",
		XName: "output tok/s per user", YName: "output tok/s per GPU", Series: series, Table: tab}
}

// paretoConfigs is the table of configurations: command, GPUs, capacity, outcome, files.
func paretoConfigs(p *Pareto) *table {
	t := &table{ID: "pareto-configs", Numeric: true, LeftCols: 2, LastLeft: true,
		Head: []string{"configuration", "command", "GPUs", "capacity", "results", "outcome"}}
	for _, c := range p.Configs {
		capacity, outcome, cls := "none found", "swept", ""
		if c.Capacity > 0 {
			capacity = strconv.FormatFloat(c.Capacity, 'g', 4, 64)
		}
		if c.Error != "" {
			outcome, cls = c.Error, "bad"
		}
		t.add(txt(c.Name), classed("wrap", c.Command), txt(strconv.FormatFloat(c.GPUs, 'g', 4, 64)), txt(capacity),
			txt(c.Dir+" (log "+c.Log+")"), classed(cls, outcome))
	}
	return t
}
