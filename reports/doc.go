// Package reports renders a metrics.Summary, and a metrics.Comparison of two result sets, for
// people and tools:
//
//   - WriteTerminal / WriteComparisonTerminal: compact aligned tables that fit 100 columns.
//   - WriteMarkdown / WriteComparisonMarkdown: GitHub-flavoured Markdown for CI comments.
//   - WriteCSV: one row per request (from a records iteration such as metrics.Source.Each).
//   - WriteHTML / WriteComparisonHTML: a self-contained page with ECharts charts (CDFs,
//     latency, throughput and load over time with warm-up shaded, token timelines of sampled
//     requests, tokens per chunk, workload lengths, scraped server metrics; for comparisons
//     overlaid CDFs, a delta chart with confidence intervals and a per-request A vs B scatter).
//
// Every number a chart shows is also in a plain HTML table next to it, so a report is complete
// with JavaScript blocked. The ECharts script is inlined from a local echarts.min.js
// (HTMLOptions.EChartsJS, else $LLMBENCH_ECHARTS_JS); without one the page references the
// pinned EChartsURL and says so visibly. Output is byte-identical for identical inputs: chart
// ids are fixed, maps are walked in sorted order, long series are reduced with LTTB (a
// deterministic downsampler) so a 100,000-request run stays a few megabytes.
//
// The package never computes a statistic that metrics owns (it only formats and plots the
// Summary and Comparison; per-request timings for CSV and the samples are read straight off
// each Record), never touches the network, never reads the environment or files except
// through HTMLOptions, and escapes all outside text: html/template for HTML, JSON escaping for
// chart options, entity and backslash escaping for Markdown, control-character removal for the
// terminal, and formula neutralization for CSV.
//
// reports is not a supported Go API: its exported functions serve the llmbench command and may
// change in any release. What is stable is what it writes (the CSV columns, the Markdown and
// terminal layouts, the HTML report), byte-identical for identical inputs.
package reports
