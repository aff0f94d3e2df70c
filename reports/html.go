package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/llmbench/llmbench/metrics"
)

// EChartsEnv names the environment variable holding the path of a local echarts.min.js, used
// when HTMLOptions.EChartsJS is empty.
const EChartsEnv = "LLMBENCH_ECHARTS_JS"

// EChartsVersion is the ECharts release the reports are written for and the one EChartsURL
// pins.
const EChartsVersion = "5.6.0"

// EChartsURL is where a report loads ECharts from when no local copy is given.
const EChartsURL = "https://cdn.jsdelivr.net/npm/echarts@" + EChartsVersion + "/dist/echarts.min.js"

// maxEChartsBytes bounds an inlined script; echarts.min.js is about 1 MB.
const maxEChartsBytes = 8 << 20

// HTMLOptions configure WriteHTML and WriteComparisonHTML. A comparison uses Title,
// EChartsJS, Pairs, MaxPoints, Getenv and ReadFile; a single run all but Pairs.
type HTMLOptions struct {
	// Title heads the page; empty means a title built from the run.
	Title string
	// EChartsJS is the path of a local echarts.min.js to inline, so the report works offline.
	// Empty means the path in $LLMBENCH_ECHARTS_JS; with neither, the page references
	// EChartsURL and says so visibly.
	EChartsJS string
	// Samples are a few requests for the token-timeline view (see SampleRecords), and
	// SampleReasons says why each was picked (same order; may be shorter or nil).
	Samples       []metrics.Record
	SampleReasons []string
	// ServerMetrics is the scraped /metrics series, nil when not scraped.
	ServerMetrics *ServerSeries
	// Pairs are matched per-request latencies of a comparison (see PairRecords), for the A vs B
	// scatter; nil leaves the scatter out.
	Pairs *RequestPairs
	// MaxPoints bounds every plotted series (0 = 600); longer series are downsampled with LTTB.
	MaxPoints int
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
	// ReadFile reads the ECharts script (os.ReadFile when nil).
	ReadFile func(string) ([]byte, error)
}

func (o *HTMLOptions) maxPoints() int {
	if o.MaxPoints > 0 {
		return o.MaxPoints
	}
	return defaultMaxPoints
}

// scriptRef is how the page gets ECharts: inlined, or from a URL with a visible note.
type scriptRef struct {
	Inline template.JS
	URL    string
	Source string // the local path that was inlined
}

var closeScript = regexp.MustCompile(`(?i)</(script)`)

// resolveECharts finds the ECharts script: the explicit path, then the environment variable,
// then the pinned URL. A path that is given but unreadable is an error, not a silent fallback.
func resolveECharts(o *HTMLOptions) (scriptRef, error) {
	getenv, readFile := o.Getenv, o.ReadFile
	if getenv == nil {
		getenv = os.Getenv
	}
	if readFile == nil {
		readFile = os.ReadFile
	}
	path, from := o.EChartsJS, "--echarts-js"
	if path == "" {
		path, from = getenv(EChartsEnv), "$"+EChartsEnv
	}
	if path == "" {
		return scriptRef{URL: EChartsURL}, nil
	}
	b, err := readFile(path)
	if err != nil {
		return scriptRef{}, fmt.Errorf("ECharts script %s (from %s): %w; point it at echarts.min.js from the npm package echarts@5 or leave it unset to load %s",
			path, from, err, EChartsURL)
	}
	if len(b) > maxEChartsBytes || !bytes.Contains(b, []byte("echarts")) {
		return scriptRef{}, fmt.Errorf("ECharts script %s (from %s) does not look like echarts.min.js (%d bytes); use node_modules/echarts/dist/echarts.min.js",
			path, from, len(b))
	}
	// A literal "</script" would end the inline element early; "<\/script" means the same in JS.
	js := closeScript.ReplaceAllString(string(b), `<\/$1`)
	return scriptRef{Inline: template.JS(js), Source: path}, nil
}

// cell is one table cell; Key, when set, becomes a data-k attribute that tests (and scripts)
// use to find headline numbers.
type cell struct {
	Text  string
	Key   string
	Class string
	// Href, when set, makes the text a link (html/template checks the URL).
	Href string
}

// table is a plain HTML table.
type table struct {
	ID      string
	Caption string
	Head    []string
	Rows    [][]cell
	// Numeric right-aligns every column after the first LeftCols (at least one).
	Numeric  bool
	LeftCols int
	// LastLeft left-aligns the last column too (a text note after the numbers).
	LastLeft bool
}

// Class is the table's CSS class list.
func (t *table) Class() string {
	var c []string
	if t.Numeric {
		c = append(c, "num")
	}
	if t.LeftCols > 1 {
		c = append(c, "l"+strconv.Itoa(min(t.LeftCols, 4)))
	}
	if t.LastLeft {
		c = append(c, "lastl")
	}
	return strings.Join(c, " ")
}

func (t *table) add(cells ...cell) { t.Rows = append(t.Rows, cells) }

func txt(s string) cell          { return cell{Text: s} }
func keyed(k, s string) cell     { return cell{Text: s, Key: k} }
func classed(cls, s string) cell { return cell{Text: s, Class: cls} }

// fact is one label/value pair of the run facts list.
type fact struct{ Label, Value string }

// tile is one headline number at the top of the page.
type tile struct {
	Label, Value, Sub, Key, Class string
}

// block is one piece of a section: a paragraph, a list, a table, or a grid of charts.
type block struct {
	Para   string
	Notes  []string
	Table  *table
	Tables []*table // small tables side by side
	Charts []*chartSpec
}

type section struct {
	ID, Title, Intro string
	Blocks           []block
}

// page is everything the HTML template renders.
type page struct {
	Title     string
	Kind      string // "run" or "comparison"
	Headline  string
	Good      bool
	Facts     []fact
	Warnings  []string
	Tiles     []tile
	Sections  []section
	Script    scriptRef
	Charts    template.JS
	NumCharts int
	Generator string
}

// chartList collects every chart of the page in order, marking those alone in their block
// as wide.
func (p *page) chartList() []*chartSpec {
	var out []*chartSpec
	for _, s := range p.Sections {
		for _, b := range s.Blocks {
			if len(b.Charts) == 1 {
				b.Charts[0].wide = true
			}
			out = append(out, b.Charts...)
		}
	}
	return out
}

// render finishes the page (chart JSON, ids checked) and executes the template.
func (p *page) render(w io.Writer) error {
	list := p.chartList()
	seen := map[string]bool{}
	out := make([]chartJSON, 0, len(list))
	for _, c := range list {
		if seen[c.ID] {
			return fmt.Errorf("reports: chart id %q used twice", c.ID)
		}
		seen[c.ID] = true
		if c.Height == 0 {
			c.Height = 320
		}
		c.SVG = c.svg()
		out = append(out, chartJSON{ID: c.ID, Option: c.option()})
	}
	// encoding/json escapes <, > and & inside strings, so outside text in chart options
	// (class names, labels) cannot close the script element.
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("reports: encode chart options: %w", err)
	}
	p.Charts = template.JS(b)
	p.NumCharts = len(out)
	tmpl, err := pageTemplate()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, p); err != nil {
		return fmt.Errorf("reports: render HTML: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("reports: write HTML: %w", err)
	}
	return nil
}

var pageTemplate = sync.OnceValues(func() (*template.Template, error) {
	t, err := template.New("page").Funcs(template.FuncMap{
		"join": strings.Join,
	}).Parse(pageHTML)
	if err != nil {
		return nil, fmt.Errorf("reports: parse page template: %w", err)
	}
	return t, nil
})

// WriteHTML writes the self-contained HTML report of one run: the headline verdict, run
// facts and warnings, percentile tables, throughput, goodput, failures, the per-class
// breakdown, and charts (CDFs, latency, throughput and load over time with warm-up shaded,
// token timelines of sampled requests, tokens per chunk, workload lengths, server metrics)
// whose numbers also appear in tables. Identical inputs give identical bytes.
func WriteHTML(w io.Writer, s *metrics.Summary, o HTMLOptions) error {
	if s == nil {
		return fmt.Errorf("reports: WriteHTML: nil summary")
	}
	if err := o.ServerMetrics.Validate(); err != nil {
		return err
	}
	script, err := resolveECharts(&o)
	if err != nil {
		return err
	}
	p := runPage(s, &o)
	p.Script = script
	return p.render(w)
}
