package reports

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/redact"
	"github.com/llmbench/llmbench/metrics"
)

// redactCommand hides secret flag values and URL secrets in a recorded command line again
// (summary.json is redacted when written; a report re-rendered from an older one is not
// trusted to be). The policy is internal/redact's.
func redactCommand(cmd string) string { return redact.CommandString(cmd) }

// runFacts lists what was run, in a fixed order.
func runFacts(r metrics.RunInfo) []fact {
	var f []fact
	add := func(label, v string) {
		if v != "" {
			f = append(f, fact{label, v})
		}
	}
	add("endpoint", redact.URLsIn(r.Endpoint))
	add("model", r.Model)
	add("backend", r.Backend)
	add("API", r.API)
	add("mode", modeLabel(r))
	add("trace", r.Trace)
	if r.Mode != "simulated" {
		add("seed", strconv.FormatInt(r.Seed, 10))
	}
	if r.EngineSeed != 0 {
		add("engine seed", strconv.FormatUint(r.EngineSeed, 10))
	}
	if r.PromptSalt != 0 {
		add("prompt salt", strconv.FormatUint(r.PromptSalt, 10))
	}
	if r.SaltNonce != 0 {
		add("ab salt nonce", strconv.FormatUint(r.SaltNonce, 10))
	}
	if c := r.Cold; c != nil {
		flush := "no flush offered: " + c.FlushNote
		if c.Flushed != "" {
			flush = "flushed by " + c.Flushed
		}
		add("cold start", "prompts salted; prefix cache "+flush)
	}
	add("start", r.Start)
	add("duration", fmtSeconds(r.DurationS))
	if r.RateScale != 0 && r.RateScale != 1 {
		add("rate scale", fmtShort(r.RateScale)+"×")
	}
	if r.Repeat > 1 {
		add("repeats", strconv.Itoa(r.Repeat))
	}
	add("tokenizer", r.Tokenizer)
	add("llmbench", r.Version)
	host := []string{r.Host.OS + "/" + r.Host.Arch}
	if r.Host.CPUs > 0 {
		host = append(host, strconv.Itoa(r.Host.CPUs)+" CPUs")
	}
	for _, h := range []string{r.Host.CPUModel, r.Host.GoVersion} {
		if h != "" {
			host = append(host, h)
		}
	}
	if r.Host.OS != "" || r.Host.CPUs > 0 {
		add("client host", strings.Join(host, ", "))
	}
	if r.Interrupted {
		add("interrupted", "yes: numbers cover the requests that finished")
	}
	add("command", redactCommand(r.Command))
	return f
}

func runTitle(s *metrics.Summary, o *HTMLOptions) string {
	if o.Title != "" {
		return o.Title
	}
	if s.Run.Model != "" {
		return "llmbench run: " + s.Run.Model
	}
	return "llmbench run"
}

// runPage builds the single-run page.
func runPage(s *metrics.Summary, o *HTMLOptions) *page {
	p := &page{
		Title: runTitle(s, o), Kind: "run", Headline: Headline(s), Good: healthy(s),
		Facts: runFacts(s.Run), Warnings: s.Warnings,
		Generator: "llmbench " + s.Run.Version + " · schema " + s.Schema,
	}
	p.Tiles = runTiles(s)
	p.Sections = append(p.Sections, latencySection(s), cdfSection(s))
	p.Sections = append(p.Sections, throughputSection(s))
	if sec, ok := timeSection(s.TimeSeries, o.maxPoints()); ok {
		p.Sections = append(p.Sections, sec)
	}
	p.Sections = append(p.Sections, outcomesSection(s))
	if sec, ok := qualitySection(s, o.maxPoints()); ok {
		p.Sections = append(p.Sections, sec)
	}
	if len(s.ByClass) > 0 {
		p.Sections = append(p.Sections, classSection(s))
	}
	if sec, ok := modelSection(s); ok { // per-request model (issue 38)
		p.Sections = append(p.Sections, sec)
	}
	p.Sections = append(p.Sections, deliverySection(s, o))
	if sec, ok := clusterSection(s.Cluster); ok {
		p.Sections = append(p.Sections, sec)
	}
	if sec, ok := workloadSection(s.Workload); ok {
		p.Sections = append(p.Sections, sec)
	} else if sec, ok := measuredWorkload(s.Requests); ok {
		p.Sections = append(p.Sections, sec)
	}
	if sec, ok := serverSection(o.ServerMetrics, o.maxPoints()); ok {
		p.Sections = append(p.Sections, sec)
	}
	if len(s.Run.Engine) > 0 {
		t := &table{Numeric: true, LastLeft: true}
		for _, k := range sortedKeys(s.Run.Engine) {
			t.add(txt(k), txt(s.Run.Engine[k]))
		}
		p.Sections = append(p.Sections, section{ID: "engine", Title: "Engine configuration",
			Intro: "What the run saw of the serving engine's configuration.", Blocks: []block{{Table: t}}})
	}
	return p
}

func runTiles(s *metrics.Summary) []tile {
	l := s.Latency
	reqClass := "good"
	if s.Requests.Failed > 0 {
		reqClass = "bad"
	}
	gp := tile{Label: "Goodput", Value: "no SLO", Sub: "give --slo to measure", Key: "goodput.fraction"}
	if len(s.Goodput.SLO) > 0 || len(s.Goodput.ClassSLO) > 0 {
		gp.Value = fmtPct(s.Goodput.Fraction)
		gp.Sub = fmtRate(s.Goodput.RequestsPerS) + " req/s within SLO"
	}
	client := tile{Label: "Client", Value: "healthy", Class: "good", Key: "client.limited",
		Sub: "lag p99 " + fmtDistMs(s.Client.LagMs, s.Client.LagMs.P99) + " ms"}
	if s.Client.Limited {
		client.Value, client.Class = "limited", "bad"
	}
	return []tile{
		{Label: "Requests", Value: fmtInt(int64(s.Requests.Total)), Key: "requests.total", Class: reqClass,
			Sub: fmtInt(int64(s.Requests.Succeeded)) + " ok · " + fmtInt(int64(s.Requests.Failed)) + " failed" + cancelledSub(s.Requests)},
		{Label: "Throughput", Value: fmtRate(s.Throughput.RequestsPerS) + " req/s", Key: "throughput.requests_per_s",
			Sub: fmtRate(s.Throughput.OutputTokensPerS) + " output tok/s"},
		gp,
		{Label: "TTFT p99", Value: fmtDistMs(l.TTFT, l.TTFT.P99) + " ms", Key: "latency.ttft.p99",
			Sub: "p50 " + fmtDistMs(l.TTFT, l.TTFT.P50) + " ms"},
		{Label: "ITL p99", Value: fmtDistMs(l.ITL, l.ITL.P99) + " ms", Key: "latency.itl.p99",
			Sub: "per chunk " + fmtDistMs(l.ITLChunk, l.ITLChunk.P99) + " ms"},
		{Label: "E2E p99", Value: fmtDistMs(l.E2E, l.E2E.P99) + " ms", Key: "latency.e2e.p99",
			Sub: "p50 " + fmtDistMs(l.E2E, l.E2E.P50) + " ms"},
		{Label: "Stalls", Value: fmtPct(s.Stalls.RequestFraction), Key: "stalls.requests_with_stall_fraction",
			Sub: "of requests · " + fmtInt(s.Stalls.Count) + " gaps > " + fmtShort(s.Stalls.ThresholdMs) + " ms"},
		client,
	}
}

// percentileTable is the table of a set of distributions; prefix keys its cells.
func percentileTable(caption, prefix string, rows []distRow) *table {
	t := &table{Caption: caption, Numeric: true, LastLeft: true, Head: []string{"metric (ms)"}}
	for _, st := range distStats {
		t.Head = append(t.Head, st.Label)
	}
	t.Head = append(t.Head, "count", "what it measures")
	for _, r := range rows {
		cells := []cell{txt(r.Label)}
		for _, st := range distStats {
			cells = append(cells, keyed(prefix+r.Key+"."+st.Key, fmtDistMs(r.D, st.Get(r.D))))
		}
		cells = append(cells, keyed(prefix+r.Key+".count", fmtInt(r.D.Count)), classed("txt", r.Note))
		t.add(cells...)
	}
	return t
}

func latencySection(s *metrics.Summary) section {
	rows := latencyRows(s.Latency)
	rows = append(rows, distRow{"schedule_lag", "Schedule lag", "client health: actual minus intended dispatch", s.Client.LagMs})
	intro := "Steady-state requests only (warm-up and cool-down are in Requests below). Latency counts from the intended send time, so a late client cannot hide queueing."
	if c := latencyCoverage(s.Requests); c != "" {
		intro += " " + c + "."
	}
	return section{ID: "latency", Title: "Latency",
		Intro:  intro,
		Blocks: []block{{Table: percentileTable("", "latency.", rows)}}}
}

// cdfPoints returns d's CDF, or one built from its percentiles when the summary has none.
func cdfPoints(d metrics.Dist) []metrics.CDFPoint {
	if len(d.CDF) > 0 {
		return d.CDF
	}
	if d.Count == 0 {
		return nil
	}
	return []metrics.CDFPoint{{Q: 0, Value: d.Min}, {Q: 0.5, Value: d.P50}, {Q: 0.9, Value: d.P90},
		{Q: 0.95, Value: d.P95}, {Q: 0.99, Value: d.P99}, {Q: 0.999, Value: d.P999}, {Q: 1, Value: d.Max}}
}

// cdfSeries plots a CDF as (value, fraction) points.
func cdfSeries(name, color string, pts []metrics.CDFPoint, dashed bool) seriesSpec {
	xs := make([]float64, len(pts))
	ys := make([]float64, len(pts))
	for i, p := range pts {
		xs[i], ys[i] = p.Value, p.Q
	}
	return seriesSpec{Name: name, Color: color, Data: xyPairs(xs, ys), Dashed: dashed}
}

// cdfTable lists CDFs side by side: one row per quantile of the first, one column per CDF.
func cdfTable(caption string, names []string, cdfs [][]metrics.CDFPoint) *table {
	t := &table{Caption: caption, Numeric: true, Head: append([]string{"quantile"}, names...)}
	longest := 0
	for i, c := range cdfs {
		if len(c) > len(cdfs[longest]) {
			longest = i
		}
	}
	if len(cdfs) == 0 {
		return t
	}
	for r, p := range cdfs[longest] {
		cells := []cell{txt(fmtQuantile(p.Q))}
		for _, c := range cdfs {
			v := na
			if r < len(c) {
				v = fmtMs(c[r].Value)
			}
			cells = append(cells, txt(v))
		}
		t.add(cells...)
	}
	return t
}

func cdfChart(id, title, note string, names, colors []string, dists []metrics.Dist) *chartSpec {
	c := &chartSpec{ID: id, Title: title, Note: note, XName: "ms", YName: "fraction ≤ x", YMax: 1}
	var cdfs [][]metrics.CDFPoint
	for _, d := range dists {
		cdfs = append(cdfs, cdfPoints(d))
	}
	c.XLog = longTail(cdfs)
	if c.XLog {
		c.XName = "ms (log scale)"
	}
	for i, pts := range cdfs {
		c.Series = append(c.Series, cdfSeries(names[i], colors[i], logSafe(pts, c.XLog), i > 0))
	}
	c.Table = cdfTable("", names, cdfs)
	return c
}

// longTail reports whether the CDFs span so many orders of magnitude (max over median above
// 10) that a linear axis would squash the bulk of the distribution against the left edge.
func longTail(cdfs [][]metrics.CDFPoint) bool {
	lo, hi := math.Inf(1), 0.0
	for _, pts := range cdfs {
		var med float64
		for _, p := range pts {
			if p.Q <= 0.5 {
				med = p.Value
			}
			hi = max(hi, p.Value)
		}
		if med > 0 {
			lo = min(lo, med)
		}
	}
	return !math.IsInf(lo, 1) && hi/lo > 10
}

// logSafe drops the points a log axis cannot place (zero gaps of multi-token chunks); the
// table keeps them.
func logSafe(pts []metrics.CDFPoint, log bool) []metrics.CDFPoint {
	if !log {
		return pts
	}
	out := make([]metrics.CDFPoint, 0, len(pts))
	for _, p := range pts {
		if p.Value > 0 {
			out = append(out, p)
		}
	}
	return out
}

func cdfSection(s *metrics.Summary) section {
	l := s.Latency
	return section{ID: "cdfs", Title: "Latency distributions",
		Intro: "Cumulative distributions: the height at x is the fraction of requests (or gaps) at or below x ms. A long flat top is a tail.",
		Blocks: []block{{Charts: []*chartSpec{
			cdfChart("cdf-ttft", "TTFT", "time to first token", []string{"TTFT"}, []string{colBlue}, []metrics.Dist{l.TTFT}),
			cdfChart("cdf-itl", "Inter-token latency", "per token (a k-token chunk adds k-1 zero gaps) and per chunk",
				[]string{"per token", "per chunk"}, []string{colGreen, colOrange}, []metrics.Dist{l.ITL, l.ITLChunk}),
			cdfChart("cdf-e2e", "End-to-end latency", "from intended send to the last token",
				[]string{"E2E"}, []string{colPurple}, []metrics.Dist{l.E2E}),
			cdfChart("cdf-maxgap", "Largest gap per request", "a stall shows here even when TPOT looks fine",
				[]string{"max gap", "TPOT"}, []string{colRed, colTeal}, []metrics.Dist{l.MaxGap, l.TPOT}),
		}}}}
}

// throughputSection is the key-value tables of the run: throughput, goodput, stalls and
// fluidity, client health, and sessions and cost when the run has them.
func throughputSection(s *metrics.Summary) section {
	kv := []*table{throughputTable(s), goodputTable(s), stallsTable(s), clientTable(s.Client)}
	if ss := s.Sessions; ss != nil {
		kv = append(kv, sessionsTable(ss))
	}
	if pc := s.PrefixCache; pc != nil {
		kv = append(kv, prefixCacheTable(pc))
	}
	if c := s.Cost; c != nil {
		kv = append(kv, costTable(c))
	}
	if p := s.ServerPrefixCache; p != nil {
		kv = append(kv, serverPrefixCacheTable(p))
	}
	if p := s.PrefixPriming; p != nil {
		kv = append(kv, prefixPrimingTable(p))
	}
	if en := s.Energy; en != nil {
		kv = append(kv, energyTable(en)) // issue 39: energy.go
	}
	if sp := s.Speculative; sp != nil {
		kv = append(kv, speculativeTable(sp)) // speculative.go
	}
	return section{ID: "throughput", Title: "Throughput, goodput, stalls and client health", Blocks: []block{{Tables: kv}}}
}

// throughputTable is the steady-state throughput and how the tokens were counted.
func throughputTable(s *metrics.Summary) *table {
	q, th := s.Requests, s.Throughput
	tp := &table{Caption: "Throughput (steady-state window)", Numeric: true}
	tp.add(txt("requests / s"), keyed("throughput.requests_per_s.table", fmtRate(th.RequestsPerS)))
	tp.add(txt("input tokens / s"), keyed("throughput.input_tokens_per_s", fmtRate(th.InputTokensPerS)))
	tp.add(txt("output tokens / s"), keyed("throughput.output_tokens_per_s", fmtRate(th.OutputTokensPerS)))
	tp.add(txt("window"), txt(fmtSeconds(th.WindowS)))
	tp.add(txt("input tokens"), txt(fmtInt(q.InputTokens)))
	tp.add(txt("output tokens"), txt(fmtInt(q.OutputTokens)))
	for _, k := range sortedKeys(q.TokenSource) {
		tp.add(txt("requests counted by "+k), txt(fmtInt(int64(q.TokenSource[k]))))
	}
	for _, k := range sortedKeys(q.InputSource) {
		tp.add(txt("prompts counted by "+k), txt(fmtInt(int64(q.InputSource[k]))))
	}
	if c := s.Inputs; c != nil {
		tp.add(txt("prompt tokens: trace vs server"), txt(inputsLine(c, s.Run.PromptSizing)))
	}
	for _, k := range sortedKeys(q.TokenAttribution) {
		tp.add(txt("requests split per chunk by "+k), txt(fmtInt(int64(q.TokenAttribution[k]))))
	}
	if q.UsageRejected > 0 {
		tp.add(txt("requests whose server usage was rejected"), txt(fmtInt(int64(q.UsageRejected))))
	}
	tp.add(txt("client vs server token mismatch"), txt(fmtPct(q.TokenMismatch)))
	return tp
}

// goodputTable is the goodput and the SLOs it was judged by.
func goodputTable(s *metrics.Summary) *table {
	gp := &table{Caption: "Goodput", Numeric: true}
	if len(s.Goodput.SLO) == 0 && len(s.Goodput.ClassSLO) == 0 {
		gp.add(txt("SLO"), txt("none given (--slo ttft=…,tpot=…)"))
	} else {
		gp.add(txt("goodput req/s"), keyed("goodput.requests_per_s", fmtRate(s.Goodput.RequestsPerS)))
		gp.add(txt("within every SLO"), keyed("goodput.fraction.table", fmtPct(s.Goodput.Fraction)))
		gp.add(txt("requests within SLO"), txt(fmtInt(int64(s.Goodput.Met))+" of "+fmtInt(int64(s.Requests.Total))))
		for _, k := range sortedKeys(s.Goodput.SLO) {
			gp.add(txt("SLO "+k), txt("≤ "+fmtShort(s.Goodput.SLO[k])+" ms"))
		}
		for _, c := range sortedKeys(s.Goodput.ClassSLO) {
			gp.add(txt("SLO for class "+c), txt(sloList(s.Goodput.ClassSLO[c])))
		}
	}
	return gp
}

// stallsTable is the stalls and the fluidity index.
func stallsTable(s *metrics.Summary) *table {
	st := s.Stalls
	sf := &table{Caption: "Stalls and fluidity", Numeric: true}
	rule := st.ThresholdRule
	if rule != "" {
		rule = " (" + rule + ")"
	}
	sf.add(txt("stall threshold"), txt(fmtShort(st.ThresholdMs)+" ms"+rule))
	sf.add(txt("stalls"), keyed("stalls.count", fmtInt(st.Count)))
	sf.add(txt("requests with a stall"), txt(fmtInt(st.RequestsWithStall)+" ("+fmtPct(st.RequestFraction)+")"))
	sf.add(txt("stalled time"), txt(fmtMs(st.StalledTimeMs)+" ms ("+fmtPct(st.StalledTimeFraction)+" of decode time)"))
	f := s.Fluidity
	sf.add(txt("fluidity index mean / p50"), txt(fmtFixed(f.IndexMean, 3)+" / "+fmtFixed(f.IndexP50, 3)))
	sf.add(txt("fluidity index p1 / p5"), txt(fmtFixed(f.IndexP1, 3)+" / "+fmtFixed(f.IndexP5, 3)))
	sf.add(txt("requests with index ≥ 0.9"), keyed("fluidity.fraction_ge_0_9", fmtPct(f.FractionAbove90)))
	sf.add(txt("deadlines TTFT / TBT"), txt(fmtShort(f.TTFTDeadlineMs)+" ms / "+fmtShort(f.TBTDeadlineMs)+" ms"))
	return sf
}

// clientTable is the client's health: its verdict, schedule lag and CPU.
func clientTable(c metrics.Client) *table {
	cl := &table{Caption: "Client health", Numeric: true}
	cl.add(txt("verdict"), keyed("client.verdict", clientHealth(c)))
	cl.add(txt("schedule lag p50 / p99 / max"), txt(fmtDistMs(c.LagMs, c.LagMs.P50)+" / "+
		fmtDistMs(c.LagMs, c.LagMs.P99)+" / "+fmtDistMs(c.LagMs, c.LagMs.Max)+" ms"))
	cl.add(txt("client CPU"), txt(fmtPct(c.CPUFraction)))
	if c.CPUStealFraction >= stealShown {
		cl.add(txt("CPU steal (host)"), txt(fmtPct(c.CPUStealFraction)))
	}
	return cl
}

// costTable is the run's cost: total, per request and per million tokens.
func costTable(c *metrics.Cost) *table {
	ct := &table{Caption: "Cost (" + c.Basis + ")", Numeric: true}
	ct.add(txt("total"), txt(fmtMoney(c.Total, c.Currency)))
	ct.add(txt("per request"), txt(fmtMoney(c.PerRequest, c.Currency)))
	if c.PerGoodRequest != 0 {
		ct.add(txt("per request within SLO"), txt(fmtMoney(c.PerGoodRequest, c.Currency)))
	}
	if c.PerMillionInput != 0 {
		ct.add(txt("per million input tokens"), txt(fmtMoney(c.PerMillionInput, c.Currency)))
	}
	ct.add(txt("per million output tokens"), txt(fmtMoney(c.PerMillionOutput, c.Currency)))
	ct.add(txt("per million tokens"), txt(fmtMoney(c.PerMillionTokens, c.Currency)))
	return ct
}

// phaseShades shades the warm-up and cool-down of a time series.
func phaseShades(ts *metrics.TimeSeries) []shade {
	var sh []shade
	if len(ts.T) == 0 {
		return nil
	}
	end := ts.T[len(ts.T)-1] + ts.BucketS
	if ts.WarmupEndS > ts.T[0] {
		sh = append(sh, shade{From: ts.T[0], To: ts.WarmupEndS, Label: "warm-up"})
	}
	if ts.CooldownStartS > 0 && ts.CooldownStartS < end {
		sh = append(sh, shade{From: ts.CooldownStartS, To: end, Label: "cool-down"})
	}
	return sh
}

type tsCol struct {
	name  string
	vals  []float64
	color string
	axis  int
	dash  bool
}

// tsChart plots columns over the kept indices and tabulates exactly those points.
func tsChart(id, title, note, y1, y2 string, ts *metrics.TimeSeries, idx []int, cols []tsCol) *chartSpec {
	c := &chartSpec{ID: id, Title: title, Note: note, XName: "seconds from start", YName: y1, Y2Name: y2,
		Shades: phaseShades(ts), XMax: "dataMax"}
	t := &table{Numeric: true, Head: []string{"t (s)"}}
	xs := pick(ts.T, idx)
	var present []tsCol
	for _, col := range cols {
		if len(col.vals) != len(ts.T) {
			continue
		}
		present = append(present, col)
		c.Series = append(c.Series, seriesSpec{Name: col.name, Color: col.color, YAxis: col.axis, Dashed: col.dash,
			Data: xyPairsWithGaps(xs, pick(col.vals, idx)), Width: 1.6})
		t.Head = append(t.Head, col.name)
	}
	for _, i := range idx {
		cells := []cell{txt(fmtShort(ts.T[i]))}
		for _, col := range present {
			v := na // a bucket without samples (metrics.Series): no value, not 0
			if finite(col.vals[i]) {
				v = fmtShort(rnd(col.vals[i]))
			}
			cells = append(cells, txt(v))
		}
		t.add(cells...)
	}
	c.Table = t
	return c
}

func perSecond(counts []int, bucket float64) []float64 {
	if bucket <= 0 {
		bucket = 1
	}
	out := make([]float64, len(counts))
	for i, n := range counts {
		out[i] = float64(n) / bucket
	}
	return out
}

func timeSection(ts *metrics.TimeSeries, maxPoints int) (section, bool) {
	if ts == nil || len(ts.T) == 0 {
		return section{}, false
	}
	completed := perSecond(ts.Completed, ts.BucketS)
	failed := perSecond(ts.Failed, ts.BucketS)
	sent := perSecond(ts.Sent, ts.BucketS)
	inflight, queued := ints(ts.InFlight), ints(ts.Queued)
	latency := []tsCol{
		{"TTFT p50", ts.TTFTP50, colBlue, 0, false}, {"TTFT p99", ts.TTFTP99, colBlue, 0, true},
		{"ITL p50", ts.ITLP50, colGreen, 1, false}, {"ITL p99", ts.ITLP99, colGreen, 1, true}}
	throughput := []tsCol{{"output tok/s", ts.OutputTokPerS, colPurple, 0, false},
		{"completed req/s", completed, colGreen, 1, false}, {"failed req/s", failed, colRed, 1, false}}
	load := []tsCol{{"in flight", inflight, colBlue, 0, false}, {"queued", queued, colOrange, 0, false},
		{"sent / s", sent, colGray, 0, true}}
	// Each chart keeps the union of its own series' LTTB picks, so its table has its points.
	idxOf := func(cols []tsCol) []int {
		vals := make([][]float64, len(cols))
		for i, c := range cols {
			vals[i] = gapsAsZero(c.vals) // LTTB's areas need numbers; the gaps stay gaps in the chart
		}
		return unionLTTB(ts.T, maxPoints, vals...)
	}
	li, ti, di := idxOf(latency), idxOf(throughput), idxOf(load)
	note := ""
	if kept := max(len(li), len(ti), len(di)); kept < len(ts.T) {
		note = fmt.Sprintf(" Downsampled with LTTB from %s buckets to at most %s points per chart.",
			fmtInt(int64(len(ts.T))), fmtInt(int64(kept)))
	}
	bucket := "per " + fmtShort(ts.BucketS) + " s bucket"
	return section{ID: "over-time", Title: "Over time",
		Intro: "Per-bucket series from the start of the run. Grey bands mark warm-up and cool-down, which are left out of every headline number." + note,
		Blocks: []block{{Charts: []*chartSpec{
			tsChart("ts-latency", "Latency over time", "TTFT (left axis) and ITL (right axis) percentiles, "+bucket,
				"TTFT ms", "ITL ms", ts, li, latency),
			tsChart("ts-throughput", "Throughput over time", "output tokens/s (left) and requests/s (right)",
				"tok/s", "req/s", ts, ti, throughput),
			tsChart("ts-load", "Requests in flight and queued", "queued = waiting for a client concurrency slot; sent per second for reference",
				"requests", "", ts, di, load),
		}}}}, true
}

func outcomesSection(s *metrics.Summary) section {
	q := s.Requests
	ft := &table{Caption: "Outcomes", Numeric: true, Head: []string{"outcome", "requests", "share"}}
	ft.add(txt("succeeded"), keyed("requests.succeeded", fmtInt(int64(q.Succeeded))), txt(fmtPct(frac(q.Succeeded, q.Total))))
	for _, k := range countsByValue(q.Failures) {
		ft.add(classed("bad", "failed: "+k), keyed("requests.failures."+k, fmtInt(int64(q.Failures[k]))),
			txt(fmtPct(frac(q.Failures[k], q.Total))))
	}
	if q.Cancelled > 0 { // cancellations (cancelled.go): an outcome of its own, never a failure
		ft.add(txt("cancelled by the client"), keyed("requests.cancelled", fmtInt(int64(q.Cancelled))), txt(fmtPct(frac(q.Cancelled, q.Total))))
	}
	ft.add(txt("total"), keyed("requests.total.table", fmtInt(int64(q.Total))), txt("100.0%"))
	kv := []*table{ft}
	if len(q.FailStatus) > 0 {
		st := &table{Caption: "Failures by HTTP status", Numeric: true, Head: []string{"status", "requests"}}
		for _, k := range countsByValue(q.FailStatus) {
			st.add(txt(k), txt(fmtInt(int64(q.FailStatus[k]))))
		}
		kv = append(kv, st)
	}
	blocks := []block{{Tables: kv}}
	if len(q.FailureMessages) > 0 {
		mt := &table{Caption: "Most common messages per failure kind (numbers ignored when grouping; secrets removed when recorded)",
			Numeric: true, LastLeft: true, Head: []string{"failure", "requests", "message"}}
		for _, k := range countsByValue(q.Failures) {
			for _, m := range q.FailureMessages[k] {
				mt.add(txt(k), txt(fmtInt(int64(m.Count))), cell{Text: m.Message, Class: "wrap"})
			}
		}
		blocks = append(blocks, block{Table: mt})
	}
	if len(s.Excluded) > 0 {
		ex := &table{Caption: "Excluded phases (not in any headline number)", Numeric: true,
			Head: []string{"phase", "requests", "failed", "TTFT p50", "TTFT p99", "ITL p99", "E2E p50", "E2E p99"}}
		for _, k := range sortedKeys(s.Excluded) {
			ph := s.Excluded[k]
			if ph == nil {
				continue
			}
			l := ph.Latency
			ex.add(txt(k), txt(fmtInt(int64(ph.Requests.Total))), txt(fmtInt(int64(ph.Requests.Failed))),
				txt(fmtDistMs(l.TTFT, l.TTFT.P50)), txt(fmtDistMs(l.TTFT, l.TTFT.P99)), txt(fmtDistMs(l.ITL, l.ITL.P99)),
				txt(fmtDistMs(l.E2E, l.E2E.P50)), txt(fmtDistMs(l.E2E, l.E2E.P99)))
		}
		blocks = append(blocks, block{Table: ex})
	}
	return section{ID: "requests", Title: "Requests and failures", Blocks: blocks}
}

func classSection(s *metrics.Summary) section {
	t := &table{Numeric: true, Head: []string{"class", "requests", "failed", "req/s", "output tok/s", "TTFT p50", "TTFT p99",
		"TPOT p50", "TPOT p99", "ITL p99", "E2E p50", "E2E p99", "stalled requests", "within SLO"}}
	for _, name := range sortedKeys(s.ByClass) {
		c := s.ByClass[name]
		if c == nil {
			continue
		}
		l := c.Latency
		t.add(txt(name), keyed("class."+name+".requests", fmtInt(int64(c.Requests.Total))), txt(fmtInt(int64(c.Requests.Failed))),
			txt(fmtRate(c.Throughput.RequestsPerS)), txt(fmtRate(c.Throughput.OutputTokensPerS)),
			txt(fmtDistMs(l.TTFT, l.TTFT.P50)), keyed("class."+name+".ttft.p99", fmtDistMs(l.TTFT, l.TTFT.P99)),
			txt(fmtDistMs(l.TPOT, l.TPOT.P50)), txt(fmtDistMs(l.TPOT, l.TPOT.P99)), txt(fmtDistMs(l.ITL, l.ITL.P99)),
			txt(fmtDistMs(l.E2E, l.E2E.P50)), txt(fmtDistMs(l.E2E, l.E2E.P99)), txt(fmtPct(c.Stalls.RequestFraction)),
			txt(goodputCell(c.Goodput)))
	}
	blocks := []block{{Table: t}}
	if len(s.ByClass) > 1 {
		blocks = append(blocks, block{Charts: []*chartSpec{
			classChart("class-ttft", "TTFT by class", s, func(l metrics.Latency) metrics.Dist { return l.TTFT }),
			classChart("class-e2e", "E2E by class", s, func(l metrics.Latency) metrics.Dist { return l.E2E }),
		}})
	}
	return section{ID: "classes", Title: "By request class", Intro: "Latencies in ms; SLOs per class where given.",
		Blocks: blocks}
}

// classChart compares one latency's p50 and p99 across classes.
func classChart(id, title string, s *metrics.Summary, get func(metrics.Latency) metrics.Dist) *chartSpec {
	c := &chartSpec{ID: id, Title: title, Note: "p50 and p99 per request class", YName: "ms"}
	t := &table{Numeric: true, Head: []string{"class", "p50 ms", "p99 ms"}}
	var p50, p99 []any
	for _, name := range sortedKeys(s.ByClass) {
		cs := s.ByClass[name]
		if cs == nil {
			continue
		}
		d := get(cs.Latency)
		c.XCats = append(c.XCats, name)
		if d.Count == 0 {
			p50, p99 = append(p50, "-"), append(p99, "-")
		} else {
			p50, p99 = append(p50, rnd(d.P50)), append(p99, rnd(d.P99))
		}
		t.add(txt(name), txt(fmtDistMs(d, d.P50)), txt(fmtDistMs(d, d.P99)))
	}
	c.Series = []seriesSpec{{Name: "p50", Kind: "bar", Color: colBlue, Data: p50}, {Name: "p99", Kind: "bar", Color: colOrange, Data: p99}}
	c.Table = t
	return c
}

// measuredWorkload describes the traffic from the request totals when the summary carries no
// trace statistics.
func measuredWorkload(q metrics.Requests) (section, bool) {
	if q.Total == 0 {
		return section{}, false
	}
	t := &table{Caption: "Traffic measured (no trace statistics in the summary)", Numeric: true}
	t.add(txt("requests"), txt(fmtInt(int64(q.Total))))
	if q.Succeeded > 0 {
		// requests.input_tokens counts the succeeded requests' prompts (docs/inputs.md).
		t.add(txt("input tokens per successful request (mean)"), txt(fmtFixed(float64(q.InputTokens)/float64(q.Succeeded), 1)))
		t.add(txt("output tokens per successful request (mean)"), txt(fmtFixed(float64(q.OutputTokens)/float64(q.Succeeded), 1)))
	}
	if q.OutputTokens > 0 {
		t.add(txt("input : output tokens"), txt(fmtFixed(float64(q.InputTokens)/float64(q.OutputTokens), 2)+" : 1"))
	}
	return section{ID: "workload", Title: "Workload", Blocks: []block{{Table: t}}}, true
}
