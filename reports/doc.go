// Package reports renders a metrics.Summary, and a metrics.Comparison of two result sets, for
// people and tools:
//
//   - WriteTerminal / WriteComparisonTerminal: compact aligned tables that fit 100 columns.
//   - WriteMarkdown / WriteComparisonMarkdown: GitHub-flavoured Markdown for CI comments.
//   - WriteCSV: one row per request (from a records iteration such as metrics.Source.Each).
//   - WriteHTML / WriteComparisonHTML (and WriteTrendHTML, WritePlanHTML): a self-contained
//     page with charts (CDFs, latency, throughput and load over time with warm-up shaded,
//     token timelines of sampled requests, tokens per chunk, workload lengths, scraped server
//     metrics; for comparisons overlaid CDFs, a delta chart with confidence intervals and a
//     per-request A vs B scatter).
//
// Every chart is drawn server-side as inline SVG (svg.go, svg_draw.go, svg_text.go), so it
// shows with no script, no network and nothing to install: in a CI artifact viewer, behind a
// firewall, with JavaScript blocked. The same chart is also written as an ECharts option; when
// the ECharts script is present the page swaps each SVG for an interactive chart (tooltips,
// legend toggles). Drawing in Go rather than loading a charting script was chosen because a
// report must be complete wherever it is opened; the drawer is hand-written rather than
// gonum.org/v1/plot because plot has no second y axis, embeds its own font metrics, grows the
// binary by 7.8 MB and writes 2.6 times the bytes per chart (svg.go has the figures).
// The ECharts script is inlined from a local echarts.min.js (HTMLOptions.EChartsJS, else
// $LLMBENCH_ECHARTS_JS); without one the page references the pinned EChartsURL, which only
// adds interaction where it loads, and says so in a note. Every number a chart shows is also
// in a plain HTML table next to it. Output is byte-identical for identical inputs: chart
// ids are fixed, maps are walked in sorted order, long series are reduced with LTTB (a
// deterministic downsampler) so a 100,000-request run stays a few megabytes.
//
// The package never computes a statistic that metrics owns (it only formats and plots the
// Summary and Comparison; per-request timings for CSV and the samples are read straight off
// each Record), never touches the network, never reads the environment or files except
// through HTMLOptions, and escapes all outside text: html/template for HTML, entity escaping
// in the SVG, JSON escaping for chart options, entity and backslash escaping for Markdown,
// control-character removal for the terminal, and formula neutralization for CSV.
//
// reports is not a supported Go API: its exported functions serve the llmbench command and may
// change in any release. What is stable is what it writes (the CSV columns, the Markdown and
// terminal layouts, the HTML report), byte-identical for identical inputs.
package reports
