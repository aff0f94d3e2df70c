package reports

// pageHTML is the one template of both reports. Every value reaches it through html/template,
// which escapes it for its context; chart options arrive as JSON whose strings have <, > and
// & escaped.
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="{{.Generator}}">
<title>{{.Title}}</title>
<style>
:root{--fg:#202124;--muted:#5f6368;--line:#e3e6ea;--bg:#f6f8fa;--card:#fff;--good:#137333;--bad:#b3261e;--accent:#2f6fdf}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
.wrap{max-width:1320px;margin:0 auto;padding:0 24px}
header.top{background:var(--card);border-bottom:1px solid var(--line);padding:18px 0 14px}
.brand{font-size:12px;letter-spacing:.06em;text-transform:uppercase;color:var(--muted)}
h1{font-size:22px;margin:2px 0 10px;overflow-wrap:anywhere}
.headline{font-size:17px;font-weight:600;margin:0 0 12px;padding:8px 14px;border-radius:6px;border-left:5px solid}
.headline.good{background:#e6f4ea;border-color:var(--good);color:var(--good)}
.headline.bad{background:#fce8e6;border-color:var(--bad);color:var(--bad)}
dl.facts{display:flex;flex-wrap:wrap;gap:2px 22px;margin:0;font-size:13px}
dl.facts div{display:flex;gap:6px;max-width:100%}
dt{color:var(--muted)}
dd{margin:0;font-weight:500;overflow-wrap:anywhere}
section{margin:26px 0}
h2{font-size:17px;margin:0 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
.intro{color:var(--muted);margin:0 0 12px}
.warnings{background:#fef7e0;border:1px solid #f9dd8b;border-radius:8px;padding:10px 16px}
.warnings h2{border:0;margin:0;padding:0}
.warnings ul{margin:6px 0 0;padding-left:20px}
.note{background:#e8f0fe;border:1px solid #c6dafc;border-radius:8px;padding:8px 14px;font-size:13px;margin:18px 0}
.tiles{display:grid;grid-template-columns:repeat(auto-fill,minmax(138px,1fr));gap:12px;margin-top:20px}
.tile{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 14px}
.tl{font-size:11px;color:var(--muted);text-transform:uppercase;letter-spacing:.05em}
.tv{font-size:22px;font-weight:650;font-variant-numeric:tabular-nums;white-space:nowrap}
.ts{font-size:12px;color:var(--muted)}
.tile.wide{grid-column:span 2}
.tile.bad .tv{color:var(--bad)}
.tile.good .tv{color:var(--good)}
.tw{overflow-x:auto;max-width:100%;margin:8px 0 14px}
table{border-collapse:collapse;background:var(--card);border:1px solid var(--line);font-variant-numeric:tabular-nums;font-size:13px}
caption{text-align:left;font-weight:600;padding:2px 0 6px}
th,td{padding:4px 12px;border-bottom:1px solid var(--line);white-space:nowrap;text-align:left}
th{background:#f1f3f4;font-weight:600}
tbody tr:hover{background:#f8f9fa}
table.num td:not(:first-child),table.num th:not(:first-child){text-align:right}
table.l2 td:nth-child(-n+2),table.l2 th:nth-child(-n+2),table.l3 td:nth-child(-n+3),table.l3 th:nth-child(-n+3),
table.l4 td:nth-child(-n+4),table.l4 th:nth-child(-n+4),table.lastl td:last-child,table.lastl th:last-child{text-align:left}
.kv{display:flex;flex-wrap:wrap;gap:4px 28px;align-items:flex-start}
.kv caption{white-space:nowrap}
table.num td.txt{text-align:left;color:var(--muted);white-space:normal;min-width:16em}
td.bad{color:var(--bad);font-weight:600}
td.good{color:var(--good);font-weight:600}
td.muted{color:var(--muted)}
th{white-space:normal;min-width:5.5em;overflow-wrap:anywhere}
td.wr{white-space:normal;min-width:7em}
td.wrap{white-space:normal;overflow-wrap:anywhere;min-width:12em;max-width:48em;text-align:left!important}
ul.notes{margin:4px 0 12px;padding-left:20px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:16px}
figure.card{margin:0;background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px 14px;min-width:0}
figcaption b{display:block;font-size:14px}
figcaption span{display:block;color:var(--muted);font-size:12px}
.chart{width:100%;margin-top:8px}
.chart>svg.svgchart{display:block;width:100%;height:100%}
details summary{cursor:pointer;color:var(--accent);font-size:12px;margin-top:6px}
details .tw{max-height:420px;overflow-y:auto}
code{font-size:12px;background:#f1f3f4;padding:1px 4px;border-radius:3px;overflow-wrap:anywhere}
footer{color:var(--muted);font-size:12px;padding-top:8px;padding-bottom:28px}
@media (max-width:640px){.grid{grid-template-columns:1fr}}
</style>
</head>
<body data-kind="{{.Kind}}">
<header class="top"><div class="wrap">
<div class="brand">llmbench · {{.Kind}} report</div>
<h1>{{.Title}}</h1>
<p id="headline" class="headline {{if .Good}}good{{else}}bad{{end}}">{{.Headline}}</p>
{{- if .Facts}}
<dl class="facts">{{range .Facts}}<div><dt>{{.Label}}</dt><dd>{{.Value}}</dd></div>{{end}}</dl>
{{- end}}
</div></header>
<main class="wrap">
{{- if .Script.URL}}
<p class="note" id="echarts-note">Charts are drawn into this page and need no network. Where the page can reach <code>{{.Script.URL}}</code>, ECharts replaces them with interactive versions (tooltips, legend toggles). For interactive charts offline, pass <code>--echarts-js PATH</code> or set <code>LLMBENCH_ECHARTS_JS</code> to <code>node_modules/echarts/dist/echarts.min.js</code> from <code>npm install echarts@5</code>. Every number is also in the tables.</p>
{{- end}}
{{- if .Warnings}}
<section class="warnings" id="warnings"><h2>Warnings</h2><ul>{{range .Warnings}}<li>{{.}}</li>{{end}}</ul></section>
{{- end}}
{{- if .Tiles}}
<section class="tiles" id="tiles">{{range .Tiles}}<div class="tile {{.Class}}"><div class="tl">{{.Label}}</div><div class="tv"{{if .Key}} data-k="{{.Key}}"{{end}}>{{.Value}}</div>{{if .Sub}}<div class="ts">{{.Sub}}</div>{{end}}</div>{{end}}</section>
{{- end}}
{{- range .Sections}}
<section id="{{.ID}}"><h2>{{.Title}}</h2>
{{- if .Intro}}<p class="intro">{{.Intro}}</p>{{end}}
{{- range .Blocks}}
{{- if .Para}}<p>{{.Para}}</p>{{end}}
{{- if .Notes}}<ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{- with .Table}}{{template "table" .}}{{end}}
{{- if .Tables}}<div class="kv">{{range .Tables}}{{template "table" .}}{{end}}</div>{{end}}
{{- if .Charts}}
<div class="grid">
{{- range .Charts}}
<figure class="card" id="fig-{{.ID}}"><figcaption><b>{{.Title}}</b>{{if .Note}}<span>{{.Note}}</span>{{end}}</figcaption>
<div class="chart" id="{{.ID}}" data-chart role="img" aria-label="{{.Title}} (chart; the numbers are in the table below it)" style="height:{{.Height}}px">{{.SVG}}</div>
{{- with .Table}}
<details><summary>Numbers in this chart</summary>{{template "table" .}}</details>
{{- end}}
</figure>
{{- end}}
</div>
{{- end}}
{{- end}}
</section>
{{- end}}
</main>
<footer class="wrap">{{.Generator}}</footer>
{{if .Script.Inline}}<script>{{.Script.Inline}}</script>{{else}}<script src="{{.Script.URL}}"></script>{{end}}
<script>
"use strict";
const llmbenchCharts = {{.Charts}};
(function () {
  var root = document.documentElement;
  var els = document.querySelectorAll("[data-chart]");
  if (typeof echarts === "undefined") {
    // The charts drawn into the page (SVG) stay; ECharts would only add interaction.
    root.setAttribute("data-charts", "static");
    return;
  }
  var made = [];
  llmbenchCharts.forEach(function (c) {
    var el = document.getElementById(c.id);
    if (!el) { return; }
    el.replaceChildren(); // the interactive chart replaces the drawn one
    var chart = echarts.init(el, null, {renderer: "canvas"});
    chart.setOption(c.option);
    made.push(chart);
  });
  window.addEventListener("resize", function () { made.forEach(function (c) { c.resize(); }); });
  root.setAttribute("data-charts", String(made.length));
})();
</script>
</body>
</html>
{{define "table"}}<div class="tw"><table{{if .ID}} id="{{.ID}}"{{end}}{{with .Class}} class="{{.}}"{{end}}>{{if .Caption}}<caption>{{.Caption}}</caption>{{end}}{{if .Head}}<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>{{end}}<tbody>
{{range .Rows}}<tr>{{range .}}<td{{if .Class}} class="{{.Class}}"{{end}}{{if .Key}} data-k="{{.Key}}"{{end}}>{{if .Href}}<a href="{{.Href}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}</td>{{end}}</tr>
{{end}}</tbody></table></div>{{end}}
`
