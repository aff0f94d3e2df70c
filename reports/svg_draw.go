package reports

import (
	"math"
	"strconv"
	"strings"
)

// This file lays out and draws an svgChart (see svg.go): axes fitted to the data, margins for
// the legend and labels, then grid, shades, series, labels and legend in that order.

// layout fits the axes to the points and places the plot box.
func (g *svgChart) layout() {
	c := g.c
	var xs, ys, y2s []float64
	for i, s := range c.Series {
		for _, p := range g.pts[i] {
			if p.gap {
				continue
			}
			xs = append(xs, p.x)
			if s.YAxis == 1 && c.Y2Name != "" {
				y2s = append(y2s, p.y)
			} else {
				ys = append(ys, p.y)
			}
		}
	}
	switch {
	case g.hv:
		g.x = valueAxis(xs, false, limitsOf(true, nil))
		g.y = svgAxis{cats: c.XCats}
	case len(c.XCats) > 0:
		g.x = svgAxis{cats: c.XCats}
		g.y = valueAxis(ys, c.YLog, limitsOf(!c.YLog, c.YMax))
	default:
		g.x = valueAxis(xs, c.XLog, limitsOf(false, c.XMax))
		g.y = valueAxis(ys, c.YLog, limitsOf(!c.YLog, c.YMax))
	}
	if c.Y2Name != "" {
		a := valueAxis(y2s, false, limitsOf(true, c.Y2Max))
		g.y2 = &a
	}
	g.legendRows()
	g.margins()
}

// legendRows wraps the legend (shown when there is more than one series) onto rows.
func (g *svgChart) legendRows() {
	if len(g.c.Series) <= 1 {
		return
	}
	var row []int
	x := 8.0
	for i, s := range g.c.Series {
		if s.Name == "" {
			continue
		}
		w := legendItemW(s.Name)
		if x+w > g.w-8 && len(row) > 0 {
			g.legend, row, x = append(g.legend, row), nil, 8
		}
		row, x = append(row, i), x+w
	}
	if len(row) > 0 {
		g.legend = append(g.legend, row)
	}
}

func legendItemW(name string) float64 { return 20 + textW(clipText(name, 60)) + 14 }

// margins places the plot box inside the legend, the axis names and the tick labels, and
// gives the axes their pixel ranges.
func (g *svgChart) margins() {
	c := g.c
	g.top = 8 + 18*float64(len(g.legend))
	if !g.hv && (c.YName != "" || c.Y2Name != "") {
		g.top += 16
	}
	g.top += 8
	g.bot = g.h - 22
	if g.xName() != "" {
		g.bot -= 16
	}
	maxW := 0.0
	for _, l := range g.y.labels() {
		maxW = max(maxW, textW(clipText(l, 22)))
	}
	g.left = 10 + max(maxW, 18) + 6
	g.right = g.w - 16
	if g.y2 != nil {
		w2 := 0.0
		for _, l := range g.y2.labels() {
			w2 = max(w2, textW(l))
		}
		g.right = g.w - 10 - max(w2, 18) - 6
	}
	if g.bot-g.top < 40 {
		g.top = g.bot - 40
	}
	g.x.p0, g.x.p1 = g.left, g.right
	g.y.p0, g.y.p1 = g.bot, g.top
	if g.hv {
		g.y.p0, g.y.p1 = g.top, g.bot // the first category on top, as ECharts' inverse axis
	}
	if g.y2 != nil {
		g.y2.p0, g.y2.p1 = g.bot, g.top
	}
}

// xName is the name under the x axis (a horizontal chart's value axis is named by YName).
func (g *svgChart) xName() string {
	if g.hv {
		return g.c.YName
	}
	return g.c.XName
}

// shades draws the shaded x ranges (warm-up, cool-down) behind everything else.
func (g *svgChart) shades() {
	for _, sh := range g.c.Shades {
		x0, ok0 := g.x.at(sh.From)
		x1, ok1 := g.x.at(sh.To)
		if !ok0 || !ok1 {
			continue
		}
		x0, x1 = max(min(x0, x1), g.left), min(max(x0, x1), g.right)
		if x1 <= x0 {
			continue
		}
		g.printf(`<rect class="shade" x="`, num(x0), `" y="`, num(g.top), `" width="`, num(x1-x0), `" height="`,
			num(g.bot-g.top), `" fill="#80868b" fill-opacity="0.16"><title>`, esc(sh.Label), `</title></rect>`)
	}
}

// grid draws the grid lines of the value axes and the axis line.
func (g *svgChart) grid() {
	var d strings.Builder
	if g.y.cats == nil {
		for _, p := range g.y.tickPos() {
			d.WriteString("M" + num(g.left) + " " + num(p) + "H" + num(g.right))
		}
	}
	if g.x.cats == nil {
		for _, p := range g.x.tickPos() {
			d.WriteString("M" + num(p) + " " + num(g.top) + "V" + num(g.bot))
		}
	}
	if d.Len() > 0 {
		g.printf(`<path d="`, d.String(), `" fill="none" stroke="#e8eaed"/>`)
	}
	axis := "M" + num(g.left) + " " + num(g.bot) + "H" + num(g.right)
	if g.hv {
		axis = "M" + num(g.x.base()) + " " + num(g.top) + "V" + num(g.bot)
	}
	g.printf(`<path d="`, axis, `" fill="none" stroke="#9aa0a6"/>`)
}

// seriesColor is the series' own colour, else the palette's as ECharts assigns it.
func (g *svgChart) seriesColor(i int) string {
	if c := g.c.Series[i].Color; c != "" {
		return c
	}
	return colorList[i%len(colorList)]
}

func (g *svgChart) yAxisOf(s seriesSpec) *svgAxis {
	if s.YAxis == 1 && g.y2 != nil {
		return g.y2
	}
	return &g.y
}

// series draws series i as a group whose data-n is the number of points drawn.
func (g *svgChart) series(i int) {
	s := g.c.Series[i]
	ya := g.yAxisOf(s)
	var body string
	var n int
	switch s.Kind {
	case "bar":
		body, n = g.bars(i, ya)
	case "scatter":
		size := s.Symbol
		if size == 0 {
			size = 5
		}
		body, n = g.dots(g.pts[i], ya, g.seriesColor(i), size)
	default:
		body, n = g.line(i, ya)
	}
	g.printf(`<g class="series" data-series="`, esc(s.Name), `" data-n="`, strconv.Itoa(n), `">`, body, `</g>`)
}

// pixel is the point's position, false when it cannot be drawn.
func (g *svgChart) pixel(p svgPt, ya *svgAxis) (float64, float64, bool) {
	if p.gap {
		return 0, 0, false
	}
	x, okX := g.x.at(p.x)
	y, okY := ya.at(p.y)
	return x, y, okX && okY
}

// line draws a line series: a polyline (or steps) broken at gaps, an area under it when
// asked, and dots at the points when Symbol is set.
func (g *svgChart) line(i int, ya *svgAxis) (string, int) {
	s := g.c.Series[i]
	color := g.seriesColor(i)
	var runs [][][2]float64
	var cur [][2]float64
	for _, p := range g.pts[i] {
		x, y, ok := g.pixel(p, ya)
		if !ok {
			if len(cur) > 0 {
				runs, cur = append(runs, cur), nil
			}
			continue
		}
		cur = append(cur, [2]float64{x, y})
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
	}
	var d, area strings.Builder
	n := 0
	for _, run := range runs {
		n += len(run)
		path := pathOf(run, s.Step)
		d.WriteString(path)
		if s.Area {
			base := num(ya.base())
			area.WriteString(path + "V" + base + "H" + num(run[0][0]) + "Z")
		}
	}
	var b strings.Builder
	if area.Len() > 0 {
		b.WriteString(`<path d="` + area.String() + `" fill="` + esc(color) + `" fill-opacity="0.12" stroke="none"/>`)
	}
	w := s.Width
	if w == 0 {
		w = 2
	}
	b.WriteString(`<path d="` + d.String() + `" fill="none" stroke="` + esc(color) + `" stroke-width="` +
		strconv.FormatFloat(float64(w), 'f', -1, 32) + `" stroke-linejoin="round"`)
	if s.Dashed {
		b.WriteString(` stroke-dasharray="6 4"`)
	}
	b.WriteString(`/>`)
	if s.Symbol > 0 {
		dots, _ := g.dots(g.pts[i], ya, color, s.Symbol)
		b.WriteString(dots)
	}
	return b.String(), n
}

// pathOf is the path of one unbroken run; a step goes across first, then up (ECharts' "end").
func pathOf(run [][2]float64, step bool) string {
	var b strings.Builder
	for j, p := range run {
		switch {
		case j == 0:
			b.WriteString("M" + num(p[0]) + " " + num(p[1]))
		case step:
			b.WriteString("H" + num(p[0]) + "V" + num(p[1]))
		default:
			b.WriteString("L" + num(p[0]) + " " + num(p[1]))
		}
	}
	return b.String()
}

// dots draws each point as a round dot of the given diameter: a zero-length stroke with round
// caps, the shortest mark SVG has.
func (g *svgChart) dots(pts []svgPt, ya *svgAxis, color string, size int) (string, int) {
	var d strings.Builder
	n := 0
	for _, p := range pts {
		if x, y, ok := g.pixel(p, ya); ok {
			d.WriteString("M" + num(x) + " " + num(y) + "h0")
			n++
		}
	}
	if n == 0 {
		return "", 0
	}
	return `<path d="` + d.String() + `" fill="none" stroke="` + esc(color) + `" stroke-width="` + strconv.Itoa(size) +
		`" stroke-linecap="round"/>`, n
}

// bars draws a bar series beside the chart's other bar series in each category's band, from
// the value axis's base to the value, each bar titled with its category and value.
func (g *svgChart) bars(i int, ya *svgAxis) (string, int) {
	k, nBars := 0, 0
	for j, s := range g.c.Series {
		if s.Kind == "bar" {
			if j < i {
				k++
			}
			nBars++
		}
	}
	catAx, valAx := &g.x, ya
	if g.hv {
		catAx, valAx = &g.y, &g.x
	}
	band := math.Abs(catAx.band())
	bw := math.Min(64, band*0.8/(float64(nBars)+0.3*float64(nBars-1)))
	group := bw*float64(nBars) + 0.3*bw*float64(nBars-1)
	base := valAx.base()
	var b strings.Builder
	n := 0
	for _, p := range g.pts[i] {
		cv, v := p.x, p.y
		if g.hv {
			cv, v = p.y, p.x
		}
		mid, okC := catAx.at(cv)
		vp, okV := valAx.at(v)
		if p.gap || !okC || !okV {
			continue
		}
		n++
		off := mid - group/2 + float64(k)*bw*1.3
		lo, hi := math.Min(vp, base), math.Max(vp, base)
		x, y, w, h := off, lo, bw, hi-lo
		if g.hv {
			x, y, w, h = lo, off, hi-lo, bw
		}
		color := p.color
		if color == "" {
			color = g.seriesColor(i)
		}
		title := fmtShort(v)
		if c := int(cv); c >= 0 && c < len(catAx.cats) {
			title = catAx.cats[c] + ": " + title
		}
		b.WriteString(`<rect x="` + num(x) + `" y="` + num(y) + `" width="` + num(w) + `" height="` + num(h) +
			`" fill="` + esc(color) + `"><title>` + esc(title) + `</title></rect>`)
	}
	return b.String(), n
}
