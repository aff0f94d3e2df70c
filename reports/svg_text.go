package reports

import (
	"math"
	"strings"
)

// This file writes an svgChart's text: tick labels, axis names and the legend.

// axisLabels writes the tick labels of every axis (thinned so they do not overlap) and the
// axis names.
func (g *svgChart) axisLabels() {
	var b strings.Builder
	xl, xp := g.x.labels(), g.x.tickPos()
	wide := 0.0
	for _, l := range xl {
		wide = max(wide, textW(clipText(l, 14)))
	}
	every := stride(xp, wide+8)
	for j, p := range xp {
		if j%every == 0 && j < len(xl) {
			b.WriteString(text(p, g.bot+15, "middle", clipText(xl[j], 14)))
		}
	}
	yl, yp := g.y.labels(), g.y.tickPos()
	every = stride(yp, 14)
	for j, p := range yp {
		if j%every == 0 && j < len(yl) {
			b.WriteString(text(g.left-6, p+4, "end", clipText(yl[j], 22)))
		}
	}
	if g.y2 != nil {
		y2l := g.y2.labels()
		for j, p := range g.y2.tickPos() {
			if j < len(y2l) {
				b.WriteString(text(g.right+6, p+4, "start", y2l[j]))
			}
		}
	}
	if name := g.xName(); name != "" {
		b.WriteString(text((g.left+g.right)/2, g.h-6, "middle", name))
	}
	if !g.hv && g.c.YName != "" {
		b.WriteString(text(g.left, g.top-10, "start", g.c.YName))
	}
	if g.c.Y2Name != "" && g.y2 != nil {
		b.WriteString(text(g.right, g.top-10, "end", g.c.Y2Name))
	}
	g.printf(`<g class="labels">`, b.String(), `</g>`)
}

// stride is how many ticks apart the labels must be for each to have room.
func stride(pos []float64, room float64) int {
	if len(pos) < 2 {
		return 1
	}
	gap := math.Abs(pos[len(pos)-1]-pos[0]) / float64(len(pos)-1)
	if gap <= 0 {
		return 1
	}
	return max(1, int(math.Ceil(room/gap)))
}

func text(x, y float64, anchor, s string) string {
	a := ""
	if anchor != "start" {
		a = ` text-anchor="` + anchor + `"`
	}
	return `<text x="` + num(x) + `" y="` + num(y) + `"` + a + `>` + esc(s) + `</text>`
}

// drawLegend writes the legend rows, centred: a swatch in the series' colour and style, then
// its name.
func (g *svgChart) drawLegend() {
	if len(g.legend) == 0 {
		return
	}
	var b strings.Builder
	for r, row := range g.legend {
		total := 0.0
		for _, i := range row {
			total += legendItemW(g.c.Series[i].Name)
		}
		x := (g.w - total + 14) / 2
		y := 8 + 18*float64(r) + 9
		for _, i := range row {
			s := g.c.Series[i]
			color := esc(g.seriesColor(i))
			switch s.Kind {
			case "bar":
				b.WriteString(`<rect x="` + num(x) + `" y="` + num(y-5) + `" width="14" height="10" rx="2" fill="` + color + `"/>`)
			case "scatter":
				b.WriteString(`<circle cx="` + num(x+7) + `" cy="` + num(y) + `" r="4" fill="` + color + `"/>`)
			default:
				dash := ""
				if s.Dashed {
					dash = ` stroke-dasharray="4 3"`
				}
				b.WriteString(`<path d="M` + num(x) + " " + num(y) + `h16" stroke="` + color + `" stroke-width="2"` + dash + `/>`)
			}
			name := clipText(s.Name, 60)
			b.WriteString(text(x+20, y+4, "start", name))
			x += legendItemW(s.Name)
		}
	}
	g.printf(`<g class="legend" fill="#202124">`, b.String(), `</g>`)
}
