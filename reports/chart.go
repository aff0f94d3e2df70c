package reports

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
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
}

// chartJSON is what the page script receives for one chart.
type chartJSON struct {
	ID     string         `json:"id"`
	Option map[string]any `json:"option"`
}

// option renders the spec with go-echarts into an ECharts option object. The chart id is
// fixed (go-echarts would otherwise pick a random one) so output is byte-identical.
func (c *chartSpec) option() map[string]any {
	l := charts.NewLine()
	l.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{ChartID: c.ID}),
		charts.WithAnimation(false),
		charts.WithColorsOpts(colorList),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: c.trigger()}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(len(c.Series) > 1), Top: "0"}),
		charts.WithGridOpts(opts.Grid{Left: "8", Right: "16", Top: strconv.Itoa(c.gridTop()), Bottom: "28", ContainLabel: opts.Bool(true)}),
	)
	valueX := opts.XAxis{Type: "value", Name: c.XName, NameLocation: "middle", NameGap: 24, Scale: opts.Bool(true), Max: c.XMax}
	if c.XLog {
		valueX.Type = "log"
	}
	catX := opts.XAxis{Type: "category", Name: c.XName, NameLocation: "middle", NameGap: 24}
	yType := "value"
	if c.YLog {
		yType = "log"
	}
	y := opts.YAxis{Type: yType, Name: c.YName, Max: c.YMax}
	switch {
	case c.Horizontal:
		l.SetGlobalOptions(charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: c.YName, NameLocation: "middle", NameGap: 24}),
			charts.WithYAxisOpts(opts.YAxis{Type: "category", Inverse: opts.Bool(true), Data: c.XCats}))
	case len(c.XCats) > 0:
		l.SetXAxis(c.XCats)
		l.SetGlobalOptions(charts.WithXAxisOpts(catX), charts.WithYAxisOpts(y))
	default:
		l.SetGlobalOptions(charts.WithXAxisOpts(valueX), charts.WithYAxisOpts(y))
	}
	if c.Y2Name != "" {
		l.ExtendYAxis(opts.YAxis{Type: "value", Name: c.Y2Name, Max: c.Y2Max, SplitLine: &opts.SplitLine{Show: opts.Bool(false)}})
	}
	for i, s := range c.Series {
		s := s
		first := i == 0
		l.AddSeries(s.Name, nil, charts.WithSeriesOpts(func(ss *charts.SingleSeries) {
			ss.Type = s.Kind
			if ss.Type == "" {
				ss.Type = "line"
			}
			ss.Data = s.Data
			ss.YAxisIndex = s.YAxis
			if s.Color != "" {
				ss.ItemStyle = &opts.ItemStyle{Color: s.Color}
			}
			switch ss.Type {
			case "line":
				ss.ShowSymbol = opts.Bool(s.Symbol > 0)
				if s.Symbol > 0 {
					ss.SymbolSize = s.Symbol
				}
				if s.Step {
					ss.Step = "end"
				}
				w := s.Width
				if w == 0 {
					w = 2
				}
				ls := &opts.LineStyle{Width: w, Color: s.Color}
				if s.Dashed {
					ls.Type = "dashed"
				}
				ss.LineStyle = ls
				if s.Area {
					ss.AreaStyle = &opts.AreaStyle{Opacity: opts.Float(0.12)}
				}
			case "bar":
				ss.BarMaxWidth = "64"
			case "scatter":
				size := s.Symbol
				if size == 0 {
					size = 5
				}
				ss.SymbolSize = size
			}
			if first && len(c.Shades) > 0 {
				var areas []any
				for _, sh := range c.Shades {
					areas = append(areas, []any{
						map[string]any{"name": sh.Label, "xAxis": rnd(sh.From)},
						map[string]any{"xAxis": rnd(sh.To)},
					})
				}
				ss.MarkAreas = &opts.MarkAreas{Data: areas, MarkAreaStyle: opts.MarkAreaStyle{
					ItemStyle: &opts.ItemStyle{Color: "rgba(128,134,139,0.16)"},
					Label:     &opts.Label{Show: opts.Bool(false)},
				}}
			}
		}))
	}
	l.Validate()
	return tweak(l.JSON())
}

// tweak adjusts what go-echarts cannot express: y-axis names are aligned towards the plot so
// long names are not cut off at the chart's edge. It round-trips through JSON, which also
// turns the option into plain maps and slices.
func tweak(obj map[string]any) map[string]any {
	b, err := json.Marshal(obj)
	if err != nil {
		return obj
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return obj
	}
	if ys, ok := m["yAxis"].([]any); ok {
		for i, y := range ys {
			if ym, ok := y.(map[string]any); ok {
				align := "left"
				if i > 0 {
					align = "right"
				}
				ym["nameTextStyle"] = map[string]any{"align": align}
			}
		}
	}
	return m
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
