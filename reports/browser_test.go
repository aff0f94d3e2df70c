package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/llmbench/llmbench/metrics"
)

// The browser test opens every kind of report from files in headless Chromium with the
// network disabled and checks what a reader would see. Pages made without ECharts (the
// default: the pinned CDN URL, which cannot load here) must show every chart as the SVG drawn
// into the page, with marks in the series' colours; pages with a local echarts.min.js
// ($LLMBENCH_ECHARTS_JS) must replace them with interactive ECharts canvases. It needs a
// Chromium binary; the ECharts pages also need echarts.min.js. .ci/run installs both:
//
//	apt-get install -y chromium
//	npm install --prefix /tmp/echarts echarts@5
//	LLMBENCH_ECHARTS_JS=/tmp/echarts/node_modules/echarts/dist/echarts.min.js go test ./reports -run Browser
//
// Screenshots go to $LLMBENCH_ARTIFACTS (or a temporary directory, logged).

func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LLMBENCH_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("browser test skipped: no Chromium found (install Debian's chromium: apt-get install -y chromium, or set LLMBENCH_CHROMIUM)")
	return ""
}

// echartsPath is the local echarts.min.js, or "" (with the reason logged) when there is none:
// the pages that need it are then left out.
func echartsPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv(EChartsEnv)
	if p == "" {
		t.Log("ECharts pages left out: set " + EChartsEnv + " to echarts.min.js (npm install --prefix /tmp/echarts echarts@5; " +
			"then /tmp/echarts/node_modules/echarts/dist/echarts.min.js)")
		return ""
	}
	if _, err := os.Stat(p); err != nil {
		t.Logf("ECharts pages left out: %s=%s: %v", EChartsEnv, p, err)
		return ""
	}
	return p
}

func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("LLMBENCH_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	} else {
		dir = filepath.Join(dir, "reports")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("browser test artifacts (reports and screenshots): %s", dir)
	return dir
}

// chartCheck is what the page reports about one chart element.
type chartCheck struct {
	ID     string  `json:"id"`
	Canvas bool    `json:"canvas"`
	W      int     `json:"w"`
	H      int     `json:"h"`
	Ink    float64 `json:"ink"`
	Colors int     `json:"colors"`
	Data   int     `json:"data"` // pixels in a series colour
	SVG    bool    `json:"svg"`  // the drawn SVG is still there
}

// chartProbe reports, per chart element, its canvas size, how much of it is drawn, how many
// colours it uses, and how many pixels carry one of the colours its series were given — so a
// chart that shows axes but no data counts as blank.
const chartProbe = `(function () {
  function hexes(o, out) {
    if (o && typeof o === "object") {
      for (var k in o) {
        var v = o[k];
        if (k === "color" && typeof v === "string" && /^#[0-9a-f]{6}$/i.test(v)) { out.push(v); } else { hexes(v, out); }
      }
    }
    return out;
  }
  var options = {};
  llmbenchCharts.forEach(function (c) { options[c.id] = c.option; });
  return Array.from(document.querySelectorAll("[data-chart]")).map(function (el) {
    var cv = el.querySelector("canvas");
    if (!cv) { return {id: el.id, canvas: false}; }
    // Greys are left out: axis labels and grid lines are grey too.
    var want = hexes((options[el.id] || {}).series, []).map(function (h) {
      return [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)];
    }).filter(function (c) { return Math.max(c[0], c[1], c[2]) - Math.min(c[0], c[1], c[2]) > 24; });
    var d = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
    var ink = 0, n = 0, data = 0, colors = new Set();
    for (var i = 0; i < d.length; i += 4) {
      n++;
      if (d[i + 3] === 0) { continue; }
      ink++;
      if (colors.size < 64) { colors.add(d[i] + "," + d[i + 1] + "," + d[i + 2]); }
      for (var j = 0; j < want.length; j++) {
        if (d[i + 3] > 200 && Math.abs(d[i] - want[j][0]) + Math.abs(d[i + 1] - want[j][1]) + Math.abs(d[i + 2] - want[j][2]) < 40) { data++; break; }
      }
    }
    return {id: el.id, canvas: true, w: cv.width, h: cv.height, ink: ink / n, colors: colors.size, data: data,
      svg: !!el.querySelector("svg.svgchart")};
  });
})()`

// layoutCheck is what layoutProbe finds wrong with the page as laid out.
type layoutCheck struct {
	// Clipped names tables whose columns do not all fit in view: wider than the box that
	// holds them (so a column is hidden behind a scroll) or reaching past their card.
	Clipped []string `json:"clipped"`
	// Floats are pieces of visible text with float noise (14.000000000000002%).
	Floats []string `json:"floats"`
	// ZeroGaps are points of the latency-over-time chart at the buckets the fixture leaves
	// empty (emptyBuckets) that carry a value instead of ECharts' "-".
	ZeroGaps []string `json:"zeroGaps"`
}

// emptyBuckets are the seconds of the run fixture's time series that have no latency sample.
var emptyBuckets = []int{20, 21}

const layoutProbe = `(function () {
  var out = {clipped: [], floats: [], zeroGaps: []};
  document.querySelectorAll("table").forEach(function (t, i) {
    var name = (t.id || (t.caption && t.caption.textContent) || ("table " + i)) + " (" +
      Array.from(t.querySelectorAll("thead th")).map(function (th) { return th.textContent; }).join(" | ") + ")";
    var box = t.parentElement, tb = t.getBoundingClientRect();
    if (box && box.scrollWidth > box.clientWidth + 1) {
      out.clipped.push(name + ": " + box.scrollWidth + " px wide in " + box.clientWidth + " px");
      return;
    }
    var card = t.closest("figure.card, section, .wrap");
    if (card && tb.right > card.getBoundingClientRect().right + 1) {
      out.clipped.push(name + ": reaches " + Math.round(tb.right - card.getBoundingClientRect().right) + " px past its card");
    }
  });
  var m = document.body.innerText.match(/\d+\.\d*(?:0{6,}|9{6,})\d*/g);
  if (m) { out.floats = m.slice(0, 10); }
  var c = (window.llmbenchCharts || []).filter(function (c) { return c.id === "ts-latency"; })[0];
  if (c && document.body.getAttribute("data-kind") === "run") {
    c.option.series.forEach(function (s) {
      var gaps = 0;
      (s.data || []).forEach(function (p) {
        if (EMPTY.indexOf(p[0]) < 0) { return; }
        if (p[1] === "-") { gaps++; } else { out.zeroGaps.push(s.name + " at " + p[0] + " s = " + p[1]); }
      });
      // An empty bucket left out would let the line bridge it as if there were data.
      if (gaps < EMPTY.length) { out.zeroGaps.push(s.name + ": " + (EMPTY.length - gaps) + " empty bucket(s) not drawn as a gap"); }
    });
  }
  return out;
})()`

const keyProbe = `Object.fromEntries(Array.from(document.querySelectorAll("[data-k]")).map(function (el) {
  return [el.getAttribute("data-k"), el.textContent];
}))`

// browserPage is one report the browser test opens.
type browserPage struct {
	name   string
	html   []byte
	charts []string           // chart ids that must render
	want   map[string]float64 // data-k -> number the DOM must show
	text   map[string]string  // data-k -> exact text
	// static: the page was made without a local ECharts and references the pinned URL, which
	// cannot load with the network disabled; every chart must show as the SVG drawn into it.
	static bool
}

func TestBrowserRendersReports(t *testing.T) {
	chrome := findChromium(t)
	js := echartsPath(t)
	dir := artifactDir(t)

	pages := []browserPage{browserRunPage(t, ""), browserComparisonPage(t, ""), browserTrendPage(t), browserPlanPage(t)}
	if js != "" {
		pages = append(pages, browserRunPage(t, js), browserComparisonPage(t, js))
	}

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chrome), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000),
		// No network: no name resolves and every request would go to a closed proxy port.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"), chromedp.ProxyServer("http://127.0.0.1:9"))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil {
		t.Skipf("browser test skipped: Chromium at %s did not start: %v", chrome, err)
	}

	for _, pg := range pages {
		t.Run(pg.name, func(t *testing.T) {
			path := filepath.Join(dir, pg.name+".html")
			if err := os.WriteFile(path, pg.html, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := chromedp.NewContext(bctx)
			defer cancel()
			ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
			defer cancelT()

			var mu sync.Mutex
			var problems []string
			msgs := chromedp.Console(ctx)
			go func() {
				for m, err := range msgs {
					if err != nil {
						return
					}
					if m.Type == chromedp.ConsoleError || m.IsException() {
						mu.Lock()
						problems = append(problems, m.String())
						mu.Unlock()
					}
				}
			}()
			if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path)); err != nil {
				t.Fatalf("open %s: %v", path, err)
			}
			state, err := chromedp.Run(ctx, chromedp.Poll[string](`document.documentElement.getAttribute("data-charts")`))
			if err != nil {
				t.Fatalf("charts never initialized: %v", err)
			}
			if pg.static {
				checkStatic(ctx, t, pg, state, dir)
			} else {
				checkECharts(ctx, t, pg, state, dir)
			}
			cancelT()
			mu.Lock()
			defer mu.Unlock()
			for _, p := range problems {
				// A page without ECharts tries the pinned URL, which the disabled network refuses.
				if pg.static && strings.Contains(p, "Failed to load resource: net::ERR_") {
					continue
				}
				t.Errorf("console: %s", p)
			}
		})
	}
}

// checkECharts checks a page with ECharts inlined: every chart is an ECharts canvas with data
// drawn in its series' colours, the numbers in the DOM are the summary's, tables fit, empty
// buckets are gaps, planted script did not run and nothing came from the network.
func checkECharts(ctx context.Context, t *testing.T, pg browserPage, state, dir string) {
	t.Helper()
	if state != strconv.Itoa(len(pg.charts)) {
		t.Fatalf("page initialized %q charts, want %d", state, len(pg.charts))
	}
	// Let ECharts paint (it draws on the next animation frame).
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
		`new Promise(function (r) { requestAnimationFrame(function () { requestAnimationFrame(function () { r(true); }); }); })`,
		chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}

	checks, err := chromedp.Run(ctx, chromedp.Evaluate[[]chartCheck](chartProbe))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]chartCheck{}
	for _, c := range checks {
		got[c.ID] = c
	}
	for _, id := range pg.charts {
		c, ok := got[id]
		switch {
		case !ok:
			t.Errorf("chart %s missing from the page", id)
		case !c.Canvas:
			t.Errorf("chart %s has no canvas", id)
		case c.SVG:
			t.Errorf("chart %s still shows the drawn SVG beside the ECharts canvas", id)
		case c.W < 200 || c.H < 150:
			t.Errorf("chart %s canvas is %dx%d", id, c.W, c.H)
		case c.Ink < 0.01 || c.Colors < 3:
			t.Errorf("chart %s looks blank: %.2f%% of pixels drawn, %d colours", id, c.Ink*100, c.Colors)
		case c.Data < 50:
			t.Errorf("chart %s shows no data: only %d pixels in its series colours", id, c.Data)
		}
	}
	if len(checks) != len(pg.charts) {
		t.Errorf("page has %d chart elements, want %d", len(checks), len(pg.charts))
	}

	checkDOM(ctx, t, pg)
	remote, err := chromedp.Run(ctx, chromedp.Evaluate[int](
		`performance.getEntriesByType("resource").filter(function (e) { return !e.name.startsWith("file:"); }).length`))
	if err != nil || remote != 0 {
		t.Errorf("page fetched %d resources from the network (err=%v)", remote, err)
	}

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	top, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{pg.name + "-full.png": shot, pg.name + "-top.png": top} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots: %s, %s", filepath.Join(dir, pg.name+"-full.png"), filepath.Join(dir, pg.name+"-top.png"))
}

// checkDOM checks what a page shows as text, with or without ECharts: the numbers under
// data-k are the summary's, every table fits, no float noise, empty latency buckets are gaps
// in the chart data, and the planted script did not run.
func checkDOM(ctx context.Context, t *testing.T, pg browserPage) {
	t.Helper()
	keys, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](keyProbe))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range pg.want {
		text, ok := keys[k]
		if !ok {
			t.Errorf("DOM has no element with data-k=%q", k)
			continue
		}
		v, err := parseShown(text)
		if err != nil {
			t.Errorf("data-k=%q shows %q: %v", k, text, err)
			continue
		}
		if !closeEnough(v, want) {
			t.Errorf("data-k=%q shows %q (%g), summary has %g", k, text, v, want)
		}
	}
	for k, want := range pg.text {
		if keys[k] != want {
			t.Errorf("data-k=%q shows %q, want %q", k, keys[k], want)
		}
	}
	empty, _ := json.Marshal(emptyBuckets)
	layout, err := chromedp.Run(ctx, chromedp.Evaluate[layoutCheck](strings.Replace(layoutProbe, "EMPTY", string(empty), -1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range layout.Clipped {
		t.Errorf("table clipped at 1,400 px: %s", c)
	}
	for _, f := range layout.Floats {
		t.Errorf("unformatted float in the page's text: %q", f)
	}
	for _, g := range layout.ZeroGaps {
		t.Errorf("empty latency bucket drawn as a value: %s", g)
	}
	pwned, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__pwned === 1`))
	if err != nil || pwned {
		t.Errorf("planted script ran (pwned=%v, err=%v)", pwned, err)
	}
}

// parseShown reads a number as the report prints it ("1,234.5 ms", "94.0%", "12.0 req/s").
func parseShown(s string) (float64, error) {
	f := strings.Fields(strings.ReplaceAll(s, ",", ""))
	if len(f) == 0 {
		return 0, strconv.ErrSyntax
	}
	num := f[0]
	pct := strings.HasSuffix(num, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(num, "%"), 64)
	if pct {
		v /= 100
	}
	return v, err
}

// closeEnough allows for the rounding of the printed form (at most 3 significant decimals).
func closeEnough(got, want float64) bool {
	d := got - want
	if d < 0 {
		d = -d
	}
	scale := want
	if scale < 0 {
		scale = -scale
	}
	return d <= 0.0051*scale+0.0006
}

func browserRunPage(t *testing.T, js string) browserPage {
	t.Helper()
	s := fixtureSummary(`llama <script>window.__pwned=1</script>`, `planted <img src=x onerror="window.__pwned=1"> warning`)
	s.Requests.FailureMessages = map[string][]metrics.MessageCount{"timeout_idle": {
		{Message: `no chunk for 60s <img src=x onerror="window.__pwned=1"> ` + strings.Repeat("a long server message ", 12), Count: 2}}}
	for _, sr := range []metrics.Series{s.TimeSeries.TTFTP50, s.TimeSeries.TTFTP99, s.TimeSeries.ITLP50, s.TimeSeries.ITLP99} {
		for _, b := range emptyBuckets {
			sr[b] = math.NaN() // no request's first token or chunk in this second
		}
	}
	s.Cluster = &metrics.Cluster{Router: "prefix-aware", Replicas: []metrics.ReplicaLoad{
		{Requests: 520, PrefixHitRate: 0.61}, {Requests: 470, PrefixHitRate: 0.55}, {Requests: 450, PrefixHitRate: 0.12}}}
	recs := fixtureRecords(400)
	samples, why, err := SampleRecords(eachOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	// Without js the page references the pinned URL (the environment is not read).
	err = WriteHTML(&buf, s, HTMLOptions{EChartsJS: js, Samples: samples, SampleReasons: why,
		ServerMetrics: fixtureServer(130), Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	l := s.Latency
	return browserPage{
		name: pageName("run", js), html: buf.Bytes(), static: js == "",
		charts: []string{"cdf-ttft", "cdf-itl", "cdf-e2e", "cdf-maxgap", "ts-latency", "ts-throughput", "ts-load",
			"class-ttft", "class-e2e", "token-timeline", "tokens-per-chunk", "workload-lengths", "server-load", "server-kv", "replica-load"},
		want: map[string]float64{
			"requests.total": float64(s.Requests.Total), "throughput.requests_per_s": s.Throughput.RequestsPerS,
			"goodput.fraction": s.Goodput.Fraction, "latency.ttft.p99": l.TTFT.P99, "latency.itl.p99": l.ITL.P99,
			"latency.e2e.p99": l.E2E.P99, "latency.ttft.p50": l.TTFT.P50, "latency.tpot.p90": l.TPOT.P90,
			"latency.itl_chunk.p99": l.ITLChunk.P99, "latency.e2e.mean": l.E2E.Mean, "latency.queue.p999": l.Queue.P999,
			"stalls.requests_with_stall_fraction": s.Stalls.RequestFraction,
			"requests.failures.timeout_idle":      float64(s.Requests.Failures["timeout_idle"]),
		},
		text: map[string]string{"client.verdict": "client healthy"},
	}
}

// fixtureServer is a deterministic scraped /metrics series.
func fixtureServer(n int) *ServerSeries {
	sv := &ServerSeries{Source: "http://127.0.0.1:8000/metrics"}
	pre := 0.0
	for i := 0; i < n; i += 2 {
		w := float64((i*37)%50) / 50
		sv.T = append(sv.T, float64(i))
		sv.Running = append(sv.Running, 40+20*w)
		sv.Waiting = append(sv.Waiting, float64((i*7)%9))
		sv.KVCacheUsage = append(sv.KVCacheUsage, 0.55+0.4*w)
		if w > 0.9 {
			pre++
		}
		sv.Preemptions = append(sv.Preemptions, pre)
	}
	return sv
}

func browserComparisonPage(t *testing.T, js string) browserPage {
	t.Helper()
	c := fixtureComparison(`cand <script>window.__pwned=1</script>`)
	var buf bytes.Buffer
	if err := WriteComparisonHTML(&buf, c, HTMLOptions{EChartsJS: js, Pairs: fixturePairs(400), Getenv: noEnv}); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	text := map[string]string{"compare.verdict": "regression"}
	for _, m := range c.Metrics {
		if m.Unit == "ms" {
			want["delta."+m.Name+".base"] = m.Base
			want["delta."+m.Name+".cand"] = m.Cand
		}
		if m.Base != 0 {
			want["delta."+m.Name+".delta_pct"] = m.DeltaPct / 100
		}
		text["delta."+m.Name+".verdict"] = m.Verdict
	}
	return browserPage{
		name: pageName("comparison", js), html: buf.Bytes(), want: want, text: text, static: js == "",
		charts: []string{"cmp-deltas", "cmp-cdf-ttft", "cmp-cdf-itl_chunk", "cmp-cdf-e2e", "cmp-cdf-tokens_per_chunk",
			"cmp-scatter-ttft", "cmp-scatter-e2e"},
	}
}

// pageName names a page (and its screenshots) by whether ECharts is inlined into it.
func pageName(kind, js string) string {
	if js == "" {
		return kind + "-static"
	}
	return kind
}

// browserTrendPage is a history trend page with two series (one with per-run intervals) and a
// change point; it never has ECharts.
func browserTrendPage(t *testing.T) browserPage {
	t.Helper()
	tr := sampleTrend()
	s2 := tr.Series[0]
	s2.Metric, s2.Unit, s2.Better = "throughput.output_tokens_per_s", "tok/s", "higher"
	s2.Runs = append([]TrendRun(nil), s2.Runs...)
	for i := range s2.Runs {
		r := &s2.Runs[i]
		r.Value = 2400 + 30*float64(i%3)
		r.Interval, r.Lo, r.Hi = true, r.Value-40, r.Value+40
	}
	s2.Level = []float64{2430, 2430, 2430, 2430, 2430, 2430, 2430, 2430}
	s2.Changes = nil
	tr.Series = append(tr.Series, s2)
	var buf bytes.Buffer
	if err := WriteTrendHTML(&buf, tr, HTMLOptions{Getenv: noEnv}); err != nil {
		t.Fatal(err)
	}
	return browserPage{name: "trend-static", html: buf.Bytes(), static: true, charts: []string{"trend-0-0", "trend-0-1"}}
}

// browserPlanPage is a plan page (goodput against price); it never has ECharts.
func browserPlanPage(t *testing.T) browserPage {
	t.Helper()
	var buf bytes.Buffer
	if err := WritePlanHTML(&buf, planFixture(), HTMLOptions{Getenv: noEnv}); err != nil {
		t.Fatal(err)
	}
	return browserPage{name: "plan-static", html: buf.Bytes(), static: true, charts: []string{"plan-goodput-price"}}
}

// svgCheck is what the page reports about one chart element of a page without ECharts.
type svgCheck struct {
	ID     string   `json:"id"`
	SVG    bool     `json:"svg"`
	Canvas bool     `json:"canvas"`
	W      int      `json:"w"`
	H      int      `json:"h"`
	Marks  int      `json:"marks"`  // points drawn, summed over the series (their data-n)
	Empty  []string `json:"empty"`  // series groups with points but no drawing element
	Colors []string `json:"colors"` // the colours the series are drawn in
}

const svgProbe = `Array.from(document.querySelectorAll("[data-chart]")).map(function (el) {
  var svg = el.querySelector("svg.svgchart"), r = el.getBoundingClientRect();
  var out = {id: el.id, svg: !!svg, canvas: !!el.querySelector("canvas"), w: Math.round(r.width), h: Math.round(r.height),
    marks: 0, empty: [], colors: []};
  if (!svg) { return out; }
  svg.querySelectorAll("g.series").forEach(function (g) {
    var n = parseInt(g.getAttribute("data-n"), 10) || 0;
    out.marks += n;
    if (n > 0 && !g.querySelector("path[d],rect")) { out.empty.push(g.getAttribute("data-series")); }
    g.querySelectorAll("[stroke],[fill]").forEach(function (m) {
      ["stroke", "fill"].forEach(function (a) {
        var c = m.getAttribute(a);
        if (c && /^#[0-9a-f]{6}$/i.test(c) && out.colors.indexOf(c) < 0) { out.colors.push(c); }
      });
    });
  });
  return out;
})`

// checkStatic checks a page made without ECharts: the script did not load, every chart is
// the SVG drawn into the page, has marks, and shows pixels in its series' colours on screen;
// the numbers are in the DOM as the summary has them.
func checkStatic(ctx context.Context, t *testing.T, pg browserPage, state, dir string) {
	t.Helper()
	if state != "static" {
		t.Fatalf("data-charts = %q, want static (the pinned ECharts URL must not load with the network disabled)", state)
	}
	checks, err := chromedp.Run(ctx, chromedp.Evaluate[[]svgCheck](svgProbe))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]svgCheck{}
	for _, c := range checks {
		got[c.ID] = c
	}
	if len(checks) != len(pg.charts) {
		t.Errorf("page has %d chart elements, want %d", len(checks), len(pg.charts))
	}
	for _, id := range pg.charts {
		c, ok := got[id]
		switch {
		case !ok:
			t.Errorf("chart %s missing from the page", id)
			continue
		case !c.SVG || c.Canvas:
			t.Errorf("chart %s: svg=%v canvas=%v, want the drawn SVG only", id, c.SVG, c.Canvas)
			continue
		case c.W < 200 || c.H < 150:
			t.Errorf("chart %s is %dx%d px", id, c.W, c.H)
		case c.Marks == 0 || len(c.Empty) > 0:
			t.Errorf("chart %s draws no data: %d points, series without a mark %v", id, c.Marks, c.Empty)
		}
		shot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.ID(id)))
		if err != nil {
			t.Fatalf("screenshot of %s: %v", id, err)
		}
		if n := colouredPixels(t, shot, c.Colors); n < 50 {
			t.Errorf("chart %s shows no data on screen: %d pixels in its series colours %v", id, n, c.Colors)
		}
	}
	checkDOM(ctx, t, pg)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, pg.name+"-full.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", filepath.Join(dir, pg.name+"-full.png"))
}

// colouredPixels counts the opaque pixels of a PNG within a small distance of one of the given
// colours, greys left out (axis labels and grid lines are grey).
func colouredPixels(t *testing.T, shot []byte, colors []string) int {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	var want [][3]int
	for _, c := range colors {
		v, err := strconv.ParseUint(c[1:], 16, 32)
		if err != nil {
			continue
		}
		rgb := [3]int{int(v >> 16), int(v >> 8 & 0xff), int(v & 0xff)}
		if max(rgb[0], rgb[1], rgb[2])-min(rgb[0], rgb[1], rgb[2]) > 24 {
			want = append(want, rgb)
		}
	}
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			if a < 0xc000 {
				continue
			}
			for _, w := range want {
				if absInt(int(r>>8)-w[0])+absInt(int(g>>8)-w[1])+absInt(int(bl>>8)-w[2]) < 40 {
					n++
					break
				}
			}
		}
	}
	return n
}

func absInt(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
