package reports

import (
	"html/template"
	"math"
	"strconv"
)

// defaultMaxPoints bounds each plotted series; longer ones are downsampled with LTTB.
const defaultMaxPoints = 600

// palette gives series fixed colours so base/candidate and p50/p99 read the same everywhere.
var (
	colBlue   = "#2f6fdf"
	colOrange = "#e8710a"
	colGreen  = "#1e9e5a"
	colRed    = "#d93025"
	colPurple = "#8e44ad"
	colTeal   = "#0f9d9a"
	colGray   = "#80868b"
	colorList = []string{colBlue, colOrange, colGreen, colRed, colPurple, colTeal, "#b8860b", colGray}
	// sampleColors leave out red, which marks stalls in the token timeline.
	sampleColors = []string{colBlue, colOrange, colGreen, colPurple, colTeal, "#b8860b", colGray}
)

// seriesSpec is one plotted series. Data is [][2]float64 for x/y pairs, []float64 for a
// category axis, or [][2]any where "-" breaks a line.
type seriesSpec struct {
	Name   string
	Kind   string // "line" (default), "bar" or "scatter"
	Data   any
	YAxis  int
	Step   bool
	Color  string
	Dashed bool
	Width  float32
	Area   bool
	Symbol int // symbol size for scatter, or shown symbols on a line when > 0
}

// shade is a shaded x range (warm-up, cool-down).
type shade struct {
	From, To float64
	Label    string
}

// chartSpec describes one chart: axes, series and the table with the same numbers.
type chartSpec struct {
	ID, Title, Note string
	Height          int
	XName, YName    string
	Y2Name          string // a second y axis on the right when set
	XCats           []string
	YLog            bool
	YMax            any
	Y2Max           any
	XMax            any // "dataMax" ends a time axis at the last sample
	XLog            bool
	Horizontal      bool // category axis on y (bars grow to the right)
	Series          []seriesSpec
	Shades          []shade
	Table           *table
	// SVG is the chart drawn server-side (svg.go), set when the page renders.
	SVG template.HTML
	// wide: the chart is alone in its block, so its card spans the page; it is drawn wider.
	wide bool
}

// chartJSON is what the page script receives for one chart.
type chartJSON struct {
	ID     string         `json:"id"`
	Option map[string]any `json:"option"`
}

// option builds the spec's ECharts option object as plain maps and slices, which the page
// script receives as JSON (json.Marshal sorts map keys, so identical specs give identical
// bytes). The charts use a small, fixed part of ECharts' option schema, written out here
// rather than through a chart library's option types: those could not align the y-axis names
// (set towards the plot so long names are not cut off at the chart's edge) without a JSON
// round trip to patch them.
func (c *chartSpec) option() map[string]any {
	o := map[string]any{
		"animation": false,
		"color":     colorList,
		"grid":      []any{map[string]any{"left": "8", "right": "16", "top": strconv.Itoa(c.gridTop()), "bottom": "28", "containLabel": true}},
		"legend":    map[string]any{"show": len(c.Series) > 1, "top": "0"},
		"title":     map[string]any{},
		"toolbox":   map[string]any{},
		"tooltip":   map[string]any{"show": true, "trigger": c.trigger()},
	}
	o["xAxis"], o["yAxis"] = c.axes()
	series := make([]any, len(c.Series))
	for i, s := range c.Series {
		series[i] = c.series(i, s)
	}
	o["series"] = series
	return o
}

// axes are the option's x and y axes: a value (or log) x axis, a category x axis when XCats
// is set, or categories on y for a horizontal chart; a second y axis when Y2Name is set.
func (c *chartSpec) axes() (x, y []any) {
	axisName := func(ax map[string]any, name string) map[string]any {
		if name != "" {
			ax["name"] = name
		}
		return ax
	}
	yAxis := func(typ, name string, maxV any, align string) map[string]any {
		ax := axisName(map[string]any{"type": typ, "nameTextStyle": map[string]any{"align": align}}, name)
		if maxV != nil {
			ax["max"] = maxV
		}
		return ax
	}
	yType := "value"
	if c.YLog {
		yType = "log"
	}
	switch {
	case c.Horizontal:
		x = []any{axisName(map[string]any{"type": "value", "nameLocation": "middle", "nameGap": 24}, c.YName)}
		ax := map[string]any{"type": "category", "inverse": true, "nameTextStyle": map[string]any{"align": "left"}}
		if len(c.XCats) > 0 {
			ax["data"] = c.XCats
		}
		y = []any{ax}
	case len(c.XCats) > 0:
		x = []any{axisName(map[string]any{"type": "category", "nameLocation": "middle", "nameGap": 24, "data": c.XCats}, c.XName)}
		y = []any{yAxis(yType, c.YName, c.YMax, "left")}
	default:
		xType := "value"
		if c.XLog {
			xType = "log"
		}
		ax := axisName(map[string]any{"type": xType, "nameLocation": "middle", "nameGap": 24, "scale": true}, c.XName)
		if c.XMax != nil {
			ax["max"] = c.XMax
		}
		x = []any{ax}
		y = []any{yAxis(yType, c.YName, c.YMax, "left")}
	}
	if c.Y2Name != "" {
		y2 := yAxis("value", c.Y2Name, c.Y2Max, "right")
		y2["splitLine"] = map[string]any{"show": false}
		y = append(y, y2)
	}
	return x, y
}

// series is the option object of series i; the first series carries the shaded ranges.
func (c *chartSpec) series(i int, s seriesSpec) map[string]any {
	kind := s.Kind
	if kind == "" {
		kind = "line"
	}
	ss := map[string]any{"type": kind, "animation": false, "data": s.Data}
	if s.Name != "" {
		ss["name"] = s.Name
	}
	if s.YAxis != 0 {
		ss["yAxisIndex"] = s.YAxis
	}
	if s.Color != "" {
		ss["itemStyle"] = map[string]any{"color": s.Color}
	}
	switch kind {
	case "line":
		ss["showSymbol"] = s.Symbol > 0
		if s.Symbol > 0 {
			ss["symbolSize"] = s.Symbol
		}
		if s.Step {
			ss["step"] = "end"
		}
		w := s.Width
		if w == 0 {
			w = 2
		}
		ls := map[string]any{"width": w}
		if s.Color != "" {
			ls["color"] = s.Color
		}
		if s.Dashed {
			ls["type"] = "dashed"
		}
		ss["lineStyle"] = ls
		if s.Area {
			ss["areaStyle"] = map[string]any{"opacity": 0.12}
		}
	case "bar":
		ss["barMaxWidth"] = "64"
	case "scatter":
		size := s.Symbol
		if size == 0 {
			size = 5
		}
		ss["symbolSize"] = size
	}
	if i == 0 && len(c.Shades) > 0 {
		var areas []any
		for _, sh := range c.Shades {
			areas = append(areas, []any{
				map[string]any{"name": sh.Label, "xAxis": rnd(sh.From)},
				map[string]any{"xAxis": rnd(sh.To)},
			})
		}
		ss["markArea"] = map[string]any{"data": areas,
			"itemStyle": map[string]any{"color": "rgba(128,134,139,0.16)"}, "label": map[string]any{"show": false}}
	}
	return ss
}

// gridTop leaves room for the legend, which wraps onto more lines when names are long.
func (c *chartSpec) gridTop() int {
	if len(c.Series) <= 1 {
		return 36
	}
	width := 0
	for _, s := range c.Series {
		width += 40 + 7*len([]rune(s.Name))
	}
	lines := (width + 519) / 520
	return 28 + 22*lines
}

func (c *chartSpec) trigger() string {
	for _, s := range c.Series {
		if s.Kind == "scatter" {
			return "item"
		}
	}
	return "axis"
}

// rnd rounds a plotted value to four decimals so the page stays small; non-finite values
// become 0 (callers drop them before plotting where 0 would mislead).
func rnd(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return math.Round(v*1e4) / 1e4
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// xyPairs zips xs and ys into plotted points, dropping non-finite ones.
func xyPairs(xs, ys []float64) [][2]float64 {
	n := min(len(xs), len(ys))
	out := make([][2]float64, 0, n)
	for i := 0; i < n; i++ {
		if finite(xs[i]) && finite(ys[i]) {
			out = append(out, [2]float64{rnd(xs[i]), rnd(ys[i])})
		}
	}
	return out
}

// xyPairsWithGaps is xyPairs for a series with gaps (metrics.Series): a point whose y is not a
// number becomes [x, "-"], ECharts' empty value, so the line breaks there instead of bridging
// the gap or dropping to 0.
func xyPairsWithGaps(xs, ys []float64) []any {
	n := min(len(xs), len(ys))
	out := make([]any, 0, n)
	for i := 0; i < n; i++ {
		switch {
		case !finite(xs[i]):
		case finite(ys[i]):
			out = append(out, [2]float64{rnd(xs[i]), rnd(ys[i])})
		default:
			out = append(out, [2]any{rnd(xs[i]), "-"})
		}
	}
	return out
}

// gapsAsZero returns vals with every non-finite value replaced by 0.
func gapsAsZero(vals []float64) []float64 {
	out := make([]float64, len(vals))
	for i, v := range vals {
		if finite(v) {
			out[i] = v
		}
	}
	return out
}

// pick returns vals at the given indices.
func pick(vals []float64, idx []int) []float64 {
	out := make([]float64, 0, len(idx))
	for _, i := range idx {
		if i < len(vals) {
			out = append(out, vals[i])
		}
	}
	return out
}

// unionLTTB downsamples several series that share xs: each is reduced with LTTB and the
// union of the kept indices is used for all of them, so chart and table show the same rows.
func unionLTTB(xs []float64, maxPoints int, series ...[]float64) []int {
	keep := make([]bool, len(xs))
	for _, ys := range series {
		if len(ys) != len(xs) {
			continue
		}
		for _, i := range LTTB(xs, ys, maxPoints) {
			keep[i] = true
		}
	}
	var idx []int
	for i, k := range keep {
		if k {
			idx = append(idx, i)
		}
	}
	return idx
}

func ints(v []int) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
