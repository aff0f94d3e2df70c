package reports

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser test opens the single-run and comparison reports from files in headless
// Chromium and checks what a reader would see. It needs a Chromium binary and a local
// echarts.min.js ($LLMBENCH_ECHARTS_JS); .ci/run installs both:
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

func echartsPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv(EChartsEnv)
	if p == "" {
		t.Skip("browser test skipped: set " + EChartsEnv + " to echarts.min.js (npm install --prefix /tmp/echarts echarts@5; " +
			"then /tmp/echarts/node_modules/echarts/dist/echarts.min.js)")
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("browser test skipped: %s=%s: %v", EChartsEnv, p, err)
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
    return {id: el.id, canvas: true, w: cv.width, h: cv.height, ink: ink / n, colors: colors.size, data: data};
  });
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
	// noECharts: the page references a script that cannot load (an offline reader of a
	// report made without a local ECharts); charts must say so and the tables must remain.
	noECharts bool
}

func TestBrowserRendersReports(t *testing.T) {
	chrome := findChromium(t)
	js := echartsPath(t)
	dir := artifactDir(t)

	pages := []browserPage{browserRunPage(t, js), browserComparisonPage(t, js), browserOfflinePage(t)}

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chrome), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000))
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
			if pg.noECharts {
				checkOffline(ctx, t, pg, state)
				return
			}
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
			pwned, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__pwned === 1`))
			if err != nil || pwned {
				t.Errorf("planted script ran (pwned=%v, err=%v)", pwned, err)
			}
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
			cancelT()
			mu.Lock()
			defer mu.Unlock()
			for _, p := range problems {
				t.Errorf("console: %s", p)
			}
		})
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
	recs := fixtureRecords(400)
	samples, why, err := SampleRecords(eachOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	err = WriteHTML(&buf, s, HTMLOptions{EChartsJS: js, Samples: samples, SampleReasons: why,
		ServerMetrics: fixtureServer(130)})
	if err != nil {
		t.Fatal(err)
	}
	l := s.Latency
	return browserPage{
		name: "run", html: buf.Bytes(),
		charts: []string{"cdf-ttft", "cdf-itl", "cdf-e2e", "cdf-maxgap", "ts-latency", "ts-throughput", "ts-load",
			"class-ttft", "class-e2e", "token-timeline", "tokens-per-chunk", "workload-lengths", "server-load", "server-kv"},
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
	if err := WriteComparisonHTML(&buf, c, HTMLOptions{EChartsJS: js, Pairs: fixturePairs(400)}); err != nil {
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
		name: "comparison", html: buf.Bytes(), want: want, text: text,
		charts: []string{"cmp-deltas", "cmp-cdf-ttft", "cmp-cdf-itl_chunk", "cmp-cdf-e2e", "cmp-cdf-tokens_per_chunk",
			"cmp-scatter-ttft", "cmp-scatter-e2e"},
	}
}

// browserOfflinePage is the run report as a reader without network sees one that was made
// without a local ECharts: the pinned URL is swapped for one that cannot load.
func browserOfflinePage(t *testing.T) browserPage {
	t.Helper()
	s := fixtureSummary("llama-3.1-8b", "w")
	var buf bytes.Buffer
	if err := WriteHTML(&buf, s, HTMLOptions{Getenv: func(string) string { return "" }}); err != nil {
		t.Fatal(err)
	}
	html := bytes.ReplaceAll(buf.Bytes(), []byte(`src="`+EChartsURL+`"`), []byte(`src="file:///nonexistent/echarts.min.js"`))
	if bytes.Equal(html, buf.Bytes()) {
		t.Fatal("report does not reference EChartsURL")
	}
	return browserPage{name: "offline", html: html, noECharts: true,
		want: map[string]float64{"latency.ttft.p99": s.Latency.TTFT.P99, "requests.total": float64(s.Requests.Total)}}
}

func checkOffline(ctx context.Context, t *testing.T, pg browserPage, state string) {
	t.Helper()
	if state != "unavailable" {
		t.Fatalf("data-charts = %q, want unavailable", state)
	}
	res, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]int](`({
	  charts: document.querySelectorAll("[data-chart]").length,
	  said: Array.from(document.querySelectorAll(".chart.nochart")).filter(function (el) { return el.textContent.indexOf("Chart unavailable") === 0; }).length,
	  note: document.querySelectorAll("#echarts-note").length,
	  open: document.querySelectorAll("figure.card details[open]").length,
	  tables: document.querySelectorAll("table").length
	})`))
	if err != nil {
		t.Fatal(err)
	}
	if res["charts"] == 0 || res["said"] != res["charts"] || res["open"] != res["charts"] || res["note"] != 1 || res["tables"] < 10 {
		t.Errorf("offline page: %v (want every chart to say it is unavailable with its table opened, the note, and the tables)", res)
	}
	keys, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](keyProbe))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range pg.want {
		if v, err := parseShown(keys[k]); err != nil || !closeEnough(v, want) {
			t.Errorf("offline page: data-k=%q shows %q, want %g", k, keys[k], want)
		}
	}
}
