// Package reports renders a metrics.Summary (and comparisons of summaries) for people and
// tools: the terminal table, Markdown, CSV, and the self-contained HTML report with go-echarts
// charts whose every number also appears in a plain HTML table.
//
// It never computes a statistic that metrics should own, never touches the network, and escapes
// all outside text.
package reports
