package reports

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// box is a rectangle in SVG user units.
type box struct{ x0, y0, x1, y1 float64 }

func (b box) has(x, y float64) bool {
	const eps = 0.11 // coordinates are written at 0.1 px
	return x >= b.x0-eps && x <= b.x1+eps && y >= b.y0-eps && y <= b.y1+eps
}

// svgSeries is one series group of a drawn chart: its name, data-n, and every point its marks
// pass through (path vertices, rectangle corners); dots counts the round dots.
type svgSeries struct {
	name   string
	n      int
	points [][2]float64
	dots   int
}

// parsedSVG is a drawn chart read back: the plot box (the clip rectangle less its 6 px
// margin), its series and its texts.
type parsedSVG struct {
	plot   box
	series []svgSeries
	texts  []string
}

// parseSVG reads a chart's SVG with encoding/xml, which also proves it well-formed.
func parseSVG(t *testing.T, id, src string) parsedSVG {
	t.Helper()
	var out parsedSVG
	dec := xml.NewDecoder(strings.NewReader(src))
	inSeries, inText := false, false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("chart %s: SVG is not well-formed: %v", id, err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			a := attrs(e)
			switch {
			case e.Name.Local == "rect" && !inSeries && a["x"] != "" && out.plot == (box{}) && a["class"] == "":
				x, y, w, h := num4(a)
				out.plot = box{x + 6, y + 6, x + w - 6, y + h - 6}
			case e.Name.Local == "g" && a["class"] == "series":
				n, _ := strconv.Atoi(a["data-n"])
				out.series = append(out.series, svgSeries{name: a["data-series"], n: n})
				inSeries = true
			case inSeries && e.Name.Local == "path":
				s := &out.series[len(out.series)-1]
				s.points = append(s.points, pathPoints(t, a["d"])...)
				if a["stroke-linecap"] == "round" {
					s.dots += strings.Count(a["d"], "h0")
				}
			case inSeries && e.Name.Local == "rect":
				x, y, w, h := num4(a)
				s := &out.series[len(out.series)-1]
				s.points = append(s.points, [2]float64{x, y}, [2]float64{x + w, y + h})
			case e.Name.Local == "text":
				inText = true
			}
		case xml.EndElement:
			if e.Name.Local == "g" {
				inSeries = false
			}
			inText = inText && e.Name.Local != "text"
		case xml.CharData:
			if inText {
				out.texts = append(out.texts, string(e))
			}
		}
	}
	return out
}

func attrs(e xml.StartElement) map[string]string {
	m := map[string]string{}
	for _, a := range e.Attr {
		m[a.Name.Local] = a.Value
	}
	return m
}

func num4(a map[string]string) (x, y, w, h float64) {
	x, _ = strconv.ParseFloat(a["x"], 64)
	y, _ = strconv.ParseFloat(a["y"], 64)
	w, _ = strconv.ParseFloat(a["width"], 64)
	h, _ = strconv.ParseFloat(a["height"], 64)
	return x, y, w, h
}

var pathTok = regexp.MustCompile(`[MLHVZh]|-?[0-9]+(?:\.[0-9]+)?`)

// pathPoints are the absolute vertices of a path written by the drawer (M, L, H, V, Z and the
// dots' h0).
func pathPoints(t *testing.T, d string) [][2]float64 {
	t.Helper()
	toks := pathTok.FindAllString(d, -1)
	var out [][2]float64
	var x, y float64
	arg := func(i int) float64 {
		if i >= len(toks) {
			t.Fatalf("path %q ends early", d)
		}
		v, err := strconv.ParseFloat(toks[i], 64)
		if err != nil {
			t.Fatalf("path %q: %v", d, err)
		}
		return v
	}
	for i := 0; i < len(toks); i++ {
		switch toks[i] {
		case "M", "L":
			x, y = arg(i+1), arg(i+2)
			i += 2
		case "H":
			x = arg(i + 1)
			i++
		case "V":
			y = arg(i + 1)
			i++
		case "h":
			i++ // h0: a dot at the current point
			continue
		case "Z":
			continue
		default:
			t.Fatalf("path %q: unexpected %q", d, toks[i])
		}
		out = append(out, [2]float64{x, y})
	}
	return out
}

var chartSVG = regexp.MustCompile(`(?s)<div class="chart" id="([^"]+)"[^>]*>(<svg.*?</svg>)</div>`)

// reportCharts renders every report kind from the fixtures and returns each chart's SVG by id.
func reportCharts(t *testing.T) map[string]string {
	t.Helper()
	s := fixtureSummary("llama <script>alert(1)</script>", "w")
	recs := fixtureRecords(300)
	samples, why, err := SampleRecords(eachOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	var pages [4]bytes.Buffer
	errs := []error{
		WriteHTML(&pages[0], s, HTMLOptions{Samples: samples, SampleReasons: why, ServerMetrics: fixtureServer(130), Getenv: noEnv}),
		WriteComparisonHTML(&pages[1], fixtureComparison("cand"), HTMLOptions{Pairs: fixturePairs(300), Getenv: noEnv}),
		WriteTrendHTML(&pages[2], sampleTrend(), HTMLOptions{Getenv: noEnv}),
		WritePlanHTML(&pages[3], planFixture(), HTMLOptions{Getenv: noEnv}),
	}
	out := map[string]string{}
	for i, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range chartSVG.FindAllStringSubmatch(pages[i].String(), -1) {
			out[m[1]] = m[2]
		}
	}
	return out
}

// TestSVGChartsDrawEveryPointInsideThePlot: every chart of every report kind is well-formed
// SVG with at least one drawn series, and every mark lies inside the plot box — the axes were
// fitted to the data, so nothing is cut off by the clip or drawn over the labels; a scatter
// draws one dot per point it counts.
func TestSVGChartsDrawEveryPointInsideThePlot(t *testing.T) {
	charts := reportCharts(t)
	if len(charts) < 23 {
		t.Fatalf("found %d charts in the reports, want every chart of the run, comparison, trend and plan pages", len(charts))
	}
	for id, src := range charts {
		p := parseSVG(t, id, src)
		if p.plot.x1-p.plot.x0 < 200 || p.plot.y1-p.plot.y0 < 100 {
			t.Errorf("chart %s: plot box %+v too small", id, p.plot)
		}
		drawn := 0
		for _, s := range p.series {
			drawn += s.n
			if s.dots > 0 && s.dots != s.n { // a scatter, or a line with symbols: one dot per point
				t.Errorf("chart %s series %q: %d dots for %d points", id, s.name, s.dots, s.n)
			}
			for _, q := range s.points {
				if !p.plot.has(q[0], q[1]) {
					t.Errorf("chart %s series %q: mark at (%g, %g) outside the plot %+v", id, s.name, q[0], q[1], p.plot)
					break
				}
			}
		}
		if drawn == 0 {
			t.Errorf("chart %s draws no point", id)
		}
	}
}

// TestSVGScale: a point lands where its value says (middle of a 0..100 × 0..1 plot at
// (50, 0.5), corners at the extremes); a log axis puts 10 halfway between 1 and 100.
func TestSVGScale(t *testing.T) {
	c := &chartSpec{ID: "t", Height: 320, YMax: 1, Series: []seriesSpec{{Name: "p", Kind: "scatter",
		Data: [][2]float64{{0, 0}, {50, 0.5}, {100, 1}}}}}
	g := c.drawSVG()
	p := parseSVG(t, "t", g.b.String())
	want := [][2]float64{{g.left, g.bot}, {(g.left + g.right) / 2, (g.top + g.bot) / 2}, {g.right, g.top}}
	if len(p.series) != 1 || len(p.series[0].points) != 3 {
		t.Fatalf("series %+v", p.series)
	}
	for i, q := range p.series[0].points {
		if math.Abs(q[0]-want[i][0]) > 0.1 || math.Abs(q[1]-want[i][1]) > 0.1 {
			t.Errorf("point %d at %v, want %v", i, q, want[i])
		}
	}
	lg := &chartSpec{ID: "l", Height: 320, XLog: true, Series: []seriesSpec{{Kind: "scatter", Data: [][2]float64{{1, 1}, {10, 1}, {100, 1}}}}}
	g = lg.drawSVG()
	pts := parseSVG(t, "l", g.b.String()).series[0].points
	if mid := (pts[0][0] + pts[2][0]) / 2; math.Abs(pts[1][0]-mid) > 0.1 || pts[0][0] != g.left || pts[2][0] != g.right {
		t.Errorf("log axis: 1, 10, 100 at x %v (plot %g..%g)", pts, g.left, g.right)
	}
}

// TestSVGLineGapsAndSteps: "-" breaks a line into separate runs and is not counted; a step line
// goes across, then up.
func TestSVGLineGapsAndSteps(t *testing.T) {
	c := &chartSpec{ID: "g", Height: 320, Series: []seriesSpec{
		{Name: "gappy", Data: []any{[2]float64{0, 1}, [2]float64{1, 2}, [2]any{2.0, "-"}, [2]float64{3, 1}, [2]float64{4, 3}}},
		{Name: "steps", Step: true, Data: [][2]float64{{0, 0}, {2, 1}}},
	}}
	src := string(c.svg())
	p := parseSVG(t, "g", src)
	if p.series[0].n != 4 {
		t.Errorf("gappy series counts %d points, want 4 (the gap is not a point)", p.series[0].n)
	}
	d := regexp.MustCompile(`data-series="gappy"[^>]*><path d="([^"]+)"`).FindStringSubmatch(src)
	if d == nil || strings.Count(d[1], "M") != 2 {
		t.Errorf("gappy line %q: want two runs (two M)", d)
	}
	if !regexp.MustCompile(`data-series="steps"[^>]*><path d="M[0-9. ]+H[0-9.]+V[0-9.]+"`).MatchString(src) {
		t.Errorf("step line is not across-then-up: %s", src)
	}
}

// TestSVGHorizontalBars: a negative change is a bar left of the zero line, a positive one to
// its right, a "-" draws nothing, each bar takes its own colour and the CI dots sit on their
// category's row.
func TestSVGHorizontalBars(t *testing.T) {
	c := &chartSpec{ID: "h", Height: 200, Horizontal: true, YName: "% change", XCats: []string{"a", "b", "c"}, Series: []seriesSpec{
		{Name: "change %", Kind: "bar", Data: []any{
			map[string]any{"value": -20.0, "itemStyle": map[string]any{"color": colGreen}},
			map[string]any{"value": 40.0, "itemStyle": map[string]any{"color": colRed}}, "-"}},
		{Name: "CI low %", Kind: "scatter", Data: [][2]any{{-25.0, "a"}, {30.0, "b"}, {"-", "c"}}},
	}}
	g := c.drawSVG()
	src := g.b.String()
	p := parseSVG(t, "h", src)
	zero, _ := g.x.at(0)
	bars := p.series[0]
	if bars.n != 2 || len(bars.points) != 4 {
		t.Fatalf("bars: %+v", bars)
	}
	if bars.points[0][0] >= zero-1 || math.Abs(bars.points[1][0]-zero) > 0.1 {
		t.Errorf("negative bar spans x %g..%g, want it to end at the zero line %g", bars.points[0][0], bars.points[1][0], zero)
	}
	if math.Abs(bars.points[2][0]-zero) > 0.1 || bars.points[3][0] <= zero+1 {
		t.Errorf("positive bar spans x %g..%g, want it to start at the zero line %g", bars.points[2][0], bars.points[3][0], zero)
	}
	if !strings.Contains(src, `fill="`+colGreen+`"><title>a: -20</title>`) || !strings.Contains(src, `fill="`+colRed+`"><title>b: 40</title>`) {
		t.Errorf("bars lack their own colours and titles: %s", src)
	}
	dots := p.series[1]
	rowA, _ := g.y.at(0)
	if dots.n != 2 || math.Abs(dots.points[0][1]-rowA) > 0.1 || dots.points[0][0] >= bars.points[0][0] {
		t.Errorf("CI dots %+v: want 2, the first on row a (y %g) left of its bar", dots, rowA)
	}
}

// TestSVGEscapesOutsideText: names and categories from outside (class names, model names)
// cannot end an element or add one.
func TestSVGEscapesOutsideText(t *testing.T) {
	bad := `</text><script>alert(1)</script><text a="&`
	c := &chartSpec{ID: `x"><script>`, Height: 300, XName: bad, YName: bad, Y2Name: bad, XCats: []string{bad, "b"},
		Shades: []shade{{From: 0, To: 1, Label: bad}},
		Series: []seriesSpec{{Name: bad, Kind: "bar", Data: []float64{1, 2}}, {Name: bad, Data: []float64{3, 4}, YAxis: 1, Color: `red"/><script>`}}}
	src := string(c.svg())
	if strings.Contains(src, "<script") {
		t.Fatalf("outside text reached the SVG unescaped: %s", src)
	}
	p := parseSVG(t, "x", src)
	found := false
	for _, s := range p.texts {
		found = found || strings.Contains(s, "<script>")
	}
	if !found {
		t.Errorf("the escaped text should read back as written; texts: %q", p.texts)
	}
}

// TestValueAxisTicks: round ticks covering the data (zero included for a y axis), a fixed
// maximum kept, dataMax ending at the last value, decades on a log axis, short labels.
func TestValueAxisTicks(t *testing.T) {
	cases := []struct {
		vals   []float64
		log    bool
		lim    axisLimits
		lo, hi float64
		labels string
	}{
		{[]float64{3, 97}, false, axisLimits{zero: true}, 0, 100, "0 20 40 60 80 100"},
		{[]float64{0.13, 0.92}, false, axisLimits{zero: true, max: 1, fixed: true}, 0, 1, "0 0.2 0.4 0.6 0.8 1"},
		{[]float64{120, 1234}, false, axisLimits{}, 0, 1400, "0 200 400 600 800 1,000 1,200 1,400"},
		{[]float64{0, 127.5}, false, axisLimits{dataMax: true}, 0, 127.5, "0 20 40 60 80 100 120"},
		{[]float64{4, 2300}, true, axisLimits{}, 1, 10000, "1 10 100 1,000 10k"},
		{[]float64{0.02, 3}, true, axisLimits{}, 0.01, 10, "0.01 0.1 1 10"},
		{[]float64{-30, 45}, false, axisLimits{zero: true}, -40, 60, "-40 -20 0 20 40 60"},
		{nil, false, axisLimits{zero: true}, 0, 1, "0 0.2 0.4 0.6 0.8 1"},
		{[]float64{5, 5}, false, axisLimits{}, 5, 6, "5 5.2 5.4 5.6 5.8 6"},
		{[]float64{20000, 60000}, false, axisLimits{zero: true}, 0, 60000, "0 10k 20k 30k 40k 50k 60k"},
	}
	for _, c := range cases {
		a := valueAxis(c.vals, c.log, c.lim)
		got := strings.Join(a.labels(), " ")
		if math.Abs(a.lo-c.lo) > 1e-9 || math.Abs(a.hi-c.hi) > 1e-9 || got != c.labels {
			t.Errorf("valueAxis(%v, log=%v, %+v) = %g..%g %q, want %g..%g %q", c.vals, c.log, c.lim, a.lo, a.hi, got, c.lo, c.hi, c.labels)
		}
	}
}

func TestTickLabel(t *testing.T) {
	got := fmt.Sprint(tickLabel(12000, 0), " ", tickLabel(2500, 0), " ", tickLabel(3e6, 0), " ", tickLabel(math.Copysign(0, -1), 1), " ", tickLabel(0.25, 2))
	if want := "12k 2,500 3M 0 0.25"; got != want {
		t.Errorf("tick labels %q, want %q", got, want)
	}
}
