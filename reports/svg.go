package reports

import (
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Every chart of every report (run, comparison, history trend, plan) is drawn here as inline
// SVG from its chartSpec, so the page shows it with no script and no network; when ECharts is
// present the page script swaps the SVG for an interactive chart of the same spec.
//
// The drawer is hand-written rather than gonum.org/v1/plot's SVG backend, measured on
// 2026-12-04 (docs/reports.md has the figures and commands):
//   - gonum/plot wrote 38,502 bytes for a two-series, 600-point step CDF with a legend; this
//     drawer writes 14,866 bytes for the same chart (2.6 times fewer), because a point costs
//     one short path command at 0.1 px and a scatter dot one zero-length stroke.
//   - importing plot and its SVG backend grew the llmbench binary from 48.7 MB to 56.4 MB
//     (its fonts, PDF and raster backends come along).
//   - plot has no second y axis (throughput and load over time, replica load need one), no
//     per-bar colour, and lays text out with its own fonts' metrics, which the browser does
//     not use unless the font files are embedded into every chart.
//
// The drawer supports exactly what chartSpec expresses: value, log and category axes, a
// second y axis, horizontal bars, line (step, dashed, area, gaps), bar and scatter series,
// shaded x ranges and a legend.

// svgWidth is the drawing's width in SVG user units, svgWideWidth that of a chart alone in
// its block (its card spans the page); the element scales to its card.
const (
	svgWidth     = 640
	svgWideWidth = 960
)

// svgCharW is the mean width of a character of the 11 px sans-serif text, for layout.
const svgCharW = 6.2

// svgPt is one point in data units; on a category axis the coordinate is the category index.
type svgPt struct {
	x, y float64
	// gap breaks the line here (ECharts' "-").
	gap bool
	// color overrides the series colour (bars coloured by verdict).
	color string
}

// svgChart is a chart being drawn: its spec, points per series and layout.
type svgChart struct {
	c     *chartSpec
	pts   [][]svgPt
	x, y  svgAxis
	y2    *svgAxis
	hv    bool // horizontal: categories on y, values on x
	w, h  float64
	left  float64
	top   float64
	right float64
	bot   float64
	// legend holds the legend's rows of series indices.
	legend [][]int
	b      strings.Builder
}

// svg draws the chart; the result is well-formed SVG with every outside text escaped.
func (c *chartSpec) svg() template.HTML {
	return template.HTML(c.drawSVG().b.String()) // every text went through esc
}

// drawSVG lays the chart out and draws it into the returned svgChart's buffer.
func (c *chartSpec) drawSVG() *svgChart {
	g := &svgChart{c: c, hv: c.Horizontal, w: svgWidth, h: float64(c.Height)}
	if c.wide {
		g.w = svgWideWidth
	}
	if g.h <= 0 {
		g.h = 320
	}
	for _, s := range c.Series {
		g.pts = append(g.pts, c.points(s))
	}
	g.layout()
	g.draw()
	return g
}

func (g *svgChart) draw() {
	c := g.c
	g.printf(`<svg xmlns="http://www.w3.org/2000/svg" class="svgchart" preserveAspectRatio="xMidYMin meet" viewBox="0 0 `, num(g.w), " ", num(g.h),
		`" font-family="system-ui,-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif" font-size="11" fill="#5f6368">`)
	clip := "clip-" + c.ID
	g.printf(`<defs><clipPath id="`, esc(clip), `"><rect x="`, num(g.left-6), `" y="`, num(g.top-6), `" width="`,
		num(g.right-g.left+12), `" height="`, num(g.bot-g.top+12), `"/></clipPath></defs>`)
	g.shades()
	g.grid()
	g.printf(`<g clip-path="url(#`, esc(clip), `)">`)
	for i := range c.Series {
		g.series(i)
	}
	g.printf(`</g>`)
	g.axisLabels()
	g.drawLegend()
	g.printf(`</svg>`)
}

func (g *svgChart) printf(parts ...string) {
	for _, p := range parts {
		g.b.WriteString(p)
	}
}

// esc escapes text for SVG content and attribute values.
func esc(s string) string { return html.EscapeString(s) }

// num writes a pixel coordinate at 0.1 px.
func num(v float64) string {
	v = math.Round(v*10) / 10
	if v == 0 {
		v = 0 // not -0
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// clipText shortens s to n characters with an ellipsis.
func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func textW(s string) float64 { return float64(len([]rune(s))) * svgCharW }

// points normalizes a series' Data (see seriesSpec) into points.
func (c *chartSpec) points(s seriesSpec) []svgPt {
	var out []svgPt
	switch d := s.Data.(type) {
	case [][2]float64:
		for _, q := range d {
			out = append(out, svgPt{x: q[0], y: q[1]})
		}
	case []float64:
		for i, v := range d {
			out = append(out, c.catPoint(i, v, ""))
		}
	case [][2]any:
		for _, q := range d {
			out = append(out, c.pairPoint(q))
		}
	case []any:
		for i, e := range d {
			switch q := e.(type) {
			case [2]float64:
				out = append(out, svgPt{x: q[0], y: q[1]})
			case [2]any:
				out = append(out, c.pairPoint(q))
			case map[string]any:
				color := ""
				if st, ok := q["itemStyle"].(map[string]any); ok {
					color, _ = st["color"].(string)
				}
				out = append(out, c.catPoint(i, q["value"], color))
			default:
				out = append(out, c.catPoint(i, e, ""))
			}
		}
	}
	return out
}

// catPoint is the value of category i: (i, v), or (v, i) on a horizontal chart.
func (c *chartSpec) catPoint(i int, v any, color string) svgPt {
	f, ok := c.scalar(v)
	if c.Horizontal {
		return svgPt{x: f, y: float64(i), gap: !ok, color: color}
	}
	return svgPt{x: float64(i), y: f, gap: !ok, color: color}
}

func (c *chartSpec) pairPoint(q [2]any) svgPt {
	x, okX := c.scalar(q[0])
	y, okY := c.scalar(q[1])
	return svgPt{x: x, y: y, gap: !okX || !okY}
}

// scalar reads one coordinate: a number, a category name (its index), or "-" (no value).
func (c *chartSpec) scalar(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, finite(x)
	case float32:
		return float64(x), finite(float64(x))
	case int:
		return float64(x), true
	case string:
		for i, name := range c.XCats {
			if name == x && x != "-" {
				return float64(i), true
			}
		}
	}
	return 0, false
}
