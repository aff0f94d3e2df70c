package reports

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// Regenerate with: go test ./reports -run Golden -update
var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func noEnv(string) string { return "" }

// goldenOutputs renders every output format from the fixtures.
func goldenOutputs(t *testing.T) map[string][]byte {
	t.Helper()
	s := fixtureSummary("llama-3.1-8b <script>alert('model')</script>", "tokenizer mismatch on 0.2% of requests <b>bold</b>")
	recs := fixtureRecords(300)
	samples, why, err := SampleRecords(eachOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	c := fixtureComparison("spec-decode <img src=x>")
	out := map[string][]byte{}
	render := func(name string, f func(*bytes.Buffer) error) {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = b.Bytes()
	}
	render("run.html", func(b *bytes.Buffer) error {
		return WriteHTML(b, s, HTMLOptions{Samples: samples, SampleReasons: why, ServerMetrics: fixtureServer(130), Getenv: noEnv})
	})
	render("comparison.html", func(b *bytes.Buffer) error {
		return WriteComparisonHTML(b, c, HTMLOptions{Pairs: fixturePairs(300), Getenv: noEnv})
	})
	render("run.txt", func(b *bytes.Buffer) error { return WriteTerminal(b, s) })
	render("run.md", func(b *bytes.Buffer) error { return WriteMarkdown(b, s) })
	render("comparison.txt", func(b *bytes.Buffer) error { return WriteComparisonTerminal(b, c) })
	render("comparison.md", func(b *bytes.Buffer) error { return WriteComparisonMarkdown(b, c) })
	render("records.csv", func(b *bytes.Buffer) error { return WriteCSV(b, eachOf(recs[:40])) })
	return out
}

func TestGolden(t *testing.T) {
	for name, got := range goldenOutputs(t) {
		path := filepath.Join("testdata", "golden", name)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (create the golden files with: go test ./reports -run Golden -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (%d vs %d bytes); if the change is intended, run: go test ./reports -run Golden -update\nfirst difference near: %q",
				name, path, len(got), len(want), firstDiff(got, want))
		}
	}
}

func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo, hi := max(0, i-60), min(len(a), i+60)
	return string(a[lo:hi])
}

func TestOutputIsByteIdentical(t *testing.T) {
	first := goldenOutputs(t)
	for range 3 {
		for name, got := range goldenOutputs(t) {
			if !bytes.Equal(got, first[name]) {
				t.Fatalf("%s differs between two renderings of the same input", name)
			}
		}
	}
}

func TestHTMLEscapesOutsideText(t *testing.T) {
	const evil = `<script>alert(1)</script>`
	s := fixtureSummary("model "+evil, "warning "+evil)
	s.ByClass[evil] = s.ByClass["chat"]
	s.Run.Endpoint = `http://x/"onmouseover="alert(1)`
	recs := fixtureRecords(200)
	recs[13].Error = "upstream said " + evil
	samples, why, err := SampleRecords(eachOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, s, HTMLOptions{Samples: samples, SampleReasons: why, Getenv: noEnv}); err != nil {
		t.Fatal(err)
	}
	c := fixtureComparison("cand " + evil)
	c.Warnings = append(c.Warnings, evil)
	if err := WriteComparisonHTML(&b, c, HTMLOptions{Pairs: fixturePairs(100), Getenv: noEnv}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, evil) || strings.Contains(out, `"onmouseover="`) {
		t.Fatal("outside text reached the HTML unescaped")
	}
	// The only script elements are the page's own: ECharts and the chart bootstrap, twice.
	if n := strings.Count(out, "<script"); n != 4 {
		t.Fatalf("found %d <script elements, want 4", n)
	}
	for _, want := range []string{"model &lt;script&gt;", "upstream said &lt;script&gt;"} {
		if !strings.Contains(out, want) {
			t.Errorf("escaped text %q missing", want)
		}
	}
}

func TestEChartsScriptResolution(t *testing.T) {
	const js = "/*! echarts stub */ var echarts = {}; // '</script>' inside a string"
	files := map[string]string{"/opt/echarts.min.js": js, "/env/echarts.min.js": js + " from env", "/bad.js": "hello"}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EChartsEnv {
				return v
			}
			return ""
		}
	}
	s := fixtureSummary("m", "w")
	cases := []struct {
		name, path, env string
		want, notWant   string
		err             bool
	}{
		{name: "explicit path inlined", path: "/opt/echarts.min.js", env: "/env/echarts.min.js", want: `<\/script>`, notWant: EChartsURL},
		{name: "environment variable", env: "/env/echarts.min.js", want: "from env", notWant: EChartsURL},
		{name: "URL with a visible note", want: `id="echarts-note"`},
		{name: "missing file is an error", path: "/nope.js", err: true},
		{name: "not ECharts is an error", env: "/bad.js", err: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			err := WriteHTML(&b, s, HTMLOptions{EChartsJS: tc.path, Getenv: env(tc.env), ReadFile: read})
			if tc.err {
				if err == nil {
					t.Fatal("want an error")
				}
				if tc.path != "" && !errors.Is(err, os.ErrNotExist) {
					t.Errorf("error does not wrap the cause: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if !strings.Contains(out, tc.want) {
				t.Errorf("output lacks %q", tc.want)
			}
			if tc.notWant != "" && strings.Contains(out, tc.notWant) {
				t.Errorf("output contains %q", tc.notWant)
			}
		})
	}
}

func TestServerSeriesValidation(t *testing.T) {
	sv := fixtureServer(10)
	sv.Waiting = sv.Waiting[:2]
	err := WriteHTML(&bytes.Buffer{}, fixtureSummary("m", "w"), HTMLOptions{ServerMetrics: sv, Getenv: noEnv})
	if err == nil || !strings.Contains(err.Error(), "waiting") {
		t.Fatalf("want an error naming the waiting series, got %v", err)
	}
}

func TestHTMLWithEmptySummary(t *testing.T) {
	var b bytes.Buffer
	s := &metrics.Summary{Schema: metrics.SummarySchema}
	if err := WriteHTML(&b, s, HTMLOptions{Getenv: noEnv}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "no requests were measured") {
		t.Error("empty summary headline missing")
	}
	if err := WriteComparisonHTML(&b, &metrics.Comparison{}, HTMLOptions{Getenv: noEnv}); err != nil {
		t.Fatal(err)
	}
}
