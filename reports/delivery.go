package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// deliverySection shows how tokens arrived: sampled token timelines and tokens per chunk.
func deliverySection(s *metrics.Summary, o *HTMLOptions) section {
	var charts []*chartSpec
	var blocks []block
	if len(o.Samples) > 0 {
		c, info := timelineChart(s, o)
		charts = append(charts, c)
		blocks = append(blocks, block{Table: info})
	}
	charts = append(charts, chunkChart(s.TokensPerChunk))
	blocks = append([]block{{Charts: charts}}, blocks...)
	return section{ID: "delivery", Title: "Token delivery",
		Intro:  "How tokens reached the client. A flat stretch in a timeline is a stall; chunks of several tokens come from speculative decoding or server-side batching of the stream.",
		Blocks: blocks}
}

// timelineChart plots cumulative tokens against time since the intended send for each sample,
// with gaps above the stall threshold drawn over them in red.
func timelineChart(s *metrics.Summary, o *HTMLOptions) (*chartSpec, *table) {
	const ms = 1e6
	thr := s.Stalls.ThresholdMs
	c := &chartSpec{ID: "token-timeline", Title: "Token timelines of sampled requests", Height: 360,
		XName: "ms since intended send", YName: "tokens received"}
	if thr > 0 {
		c.Note = "cumulative tokens; red segments are gaps above the " + fmtShort(thr) + " ms stall threshold"
	} else {
		c.Note = "cumulative tokens per request"
	}
	info := &table{Caption: "Sampled requests", Numeric: true, LeftCols: 4, Head: []string{"request", "picked as", "class", "outcome",
		"TTFT ms", "E2E ms", "tokens", "chunks", "max gap ms", "stalls"}}
	pts := &table{Numeric: true, Head: []string{"request", "ms", "tokens", "gap ms"}}
	var stalls [][2]any
	for i := range o.Samples {
		r := &o.Samples[i]
		why := ""
		if i < len(o.SampleReasons) {
			why = o.SampleReasons[i]
		}
		xs := make([]float64, 0, len(r.Chunks)+1)
		ys := make([]float64, 0, len(r.Chunks)+1)
		if r.Sent != 0 {
			xs, ys = append(xs, float64(r.Sent-r.Intended)/ms), append(ys, 0)
		}
		var cum float64
		nStall := 0
		for j, ch := range r.Chunks {
			cum += float64(ch.Tokens)
			x := float64(ch.T-r.Intended) / ms
			xs, ys = append(xs, x), append(ys, cum)
			if j > 0 && thr > 0 {
				prev := float64(r.Chunks[j-1].T-r.Intended) / ms
				if x-prev > thr {
					nStall++
					y := cum - float64(ch.Tokens)
					stalls = append(stalls, [2]any{rnd(prev), rnd(y)}, [2]any{rnd(x), rnd(y)}, [2]any{rnd(x), "-"})
				}
			}
		}
		idx := LTTB(xs, ys, o.maxPoints())
		kx, ky := pick(xs, idx), pick(ys, idx)
		name := r.ID
		if why != "" {
			name += " (" + why + ")"
		}
		c.Series = append(c.Series, seriesSpec{Name: name, Color: sampleColors[i%len(sampleColors)], Step: true,
			Data: xyPairs(kx, ky), Width: 1.6})
		for j := range kx {
			gap := ""
			if j > 0 {
				gap = fmtMs(kx[j] - kx[j-1])
			}
			pts.add(txt(r.ID), txt(fmtMs(kx[j])), txt(fmtShort(ky[j])), txt(gap))
		}
		t := TimesOf(r)
		outcome := "ok"
		if !r.OK() {
			outcome = string(r.Failure)
			if r.Error != "" {
				outcome += ": " + r.Error
			}
		}
		info.add(txt(r.ID), txt(why), txt(r.Class), cell{Text: outcome, Class: "wrap"}, txt(msOrNA(t.TTFT, t.HasTTFT)),
			txt(msOrNA(t.E2E, t.HasE2E)), txt(strconv.Itoa(r.OutputTokens)), txt(strconv.Itoa(len(r.Chunks))),
			txt(msOrNA(t.MaxGap, t.HasGap)), txt(strconv.Itoa(nStall)))
	}
	if len(stalls) > 0 {
		c.Series = append(c.Series, seriesSpec{Name: "stall", Color: colRed, Data: stalls, Width: 4})
	}
	c.Table = pts
	return c, info
}

func msOrNA(v float64, ok bool) string {
	if !ok {
		return na
	}
	return fmtMs(v)
}

// chunkShares turns a tokens-per-chunk CDF into the share of chunks carrying k tokens for
// each integer k: share(k) = F(k) - F(k-1), with F(k) the largest listed quantile whose value
// is at most k. It is as exact as the CDF's quantile grid.
func chunkShares(d metrics.Dist) (ks []int, shares []float64, ok bool) {
	if d.Count == 0 || len(d.CDF) == 0 || d.Max-d.Min > 48 || d.Max < 1 {
		return nil, nil, false
	}
	f := func(k float64) float64 {
		best := 0.0
		for _, p := range d.CDF {
			if p.Value <= k+1e-9 && p.Q > best {
				best = p.Q
			}
		}
		return best
	}
	lo := int(math.Max(1, math.Floor(d.Min)))
	for k := lo; k <= int(math.Ceil(d.Max)); k++ {
		ks = append(ks, k)
		shares = append(shares, math.Max(0, f(float64(k))-f(float64(k-1))))
	}
	return ks, shares, true
}

func chunkChart(d metrics.Dist) *chartSpec {
	c := &chartSpec{ID: "tokens-per-chunk", Title: "Tokens per chunk", YName: "% of chunks", XName: "tokens in the chunk"}
	t := &table{Numeric: true}
	if ks, shares, ok := chunkShares(d); ok {
		c.Note = "share of content chunks carrying k tokens (from the distribution's quantile points); mean " + fmtFixed(d.Mean, 2)
		vals := make([]float64, len(ks))
		t.Head = []string{"tokens", "% of chunks"}
		for i, k := range ks {
			c.XCats = append(c.XCats, strconv.Itoa(k))
			vals[i] = rnd(shares[i] * 100)
			t.add(txt(strconv.Itoa(k)), txt(fmtFixed(shares[i]*100, 1)))
		}
		c.Series = []seriesSpec{{Name: "chunks", Kind: "bar", Color: colTeal, Data: vals}}
		c.Table = t
		return c
	}
	c.Note = "percentiles of tokens per chunk"
	c.YName, c.XName = "tokens", ""
	t.Head = []string{"statistic", "tokens"}
	var vals []float64
	for _, st := range append([]distStat{{"min", "min", func(d metrics.Dist) float64 { return d.Min }}}, distStats...) {
		v := st.Get(d)
		if d.Count == 0 {
			v = 0
		}
		c.XCats = append(c.XCats, st.Label)
		vals = append(vals, rnd(v))
		t.add(txt(st.Label), txt(fmtDistMs(d, v)))
	}
	c.Series = []seriesSpec{{Name: "tokens", Kind: "bar", Color: colTeal, Data: vals}}
	c.Table = t
	return c
}

// workloadDist is a length distribution found in Summary.Workload.
type workloadDist struct {
	name string
	vals map[string]float64
}

var workloadStatOrder = []string{"min", "mean", "p50", "p90", "p95", "p99", "p999", "max"}

// workloadSection renders Summary.Workload generically (it is filled from the trace's
// statistics, whose type this package does not import): objects with percentile keys become
// length distributions, every other scalar becomes a fact, in the order the JSON has them.
func workloadSection(w any) (section, bool) {
	if w == nil {
		return section{}, false
	}
	raw, err := json.Marshal(w)
	if err != nil {
		return section{ID: "workload", Title: "Workload", Blocks: []block{{Para: "The workload description could not be shown: " + err.Error()}}}, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return section{}, false
	}
	var dists []workloadDist
	var facts []workloadFact
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if prefix == "agentic" {
			return // the sessions table shows it (workload_sessions.go): its distributions are not token lengths
		}
		switch x := v.(type) {
		case []member:
			if d, ok := asDist(x); ok && prefix != "" {
				dists = append(dists, workloadDist{prefix, d})
				return
			}
			for _, m := range x {
				p := m.key
				if prefix != "" {
					p = prefix + "." + m.key
				}
				walk(p, m.val)
			}
		default:
			facts = append(facts, workloadFact{prefix, x})
		}
	}
	walk("", v)
	var blocks []block
	if len(dists) > 0 {
		blocks = append(blocks, block{Charts: []*chartSpec{workloadChart(dists)}})
	}
	sent, classes := trafficTables(facts)
	if len(sent.Rows) > 0 {
		blocks = append(blocks, block{Table: sent})
	}
	if classes != nil {
		blocks = append(blocks, block{Table: classes})
	}
	if ss, ok := workloadSessions(w); ok {
		blocks = append(blocks, block{Table: workloadSessionsTable(ss)})
	}
	if len(blocks) == 0 {
		return section{}, false
	}
	return section{ID: "workload", Title: "Workload",
		Intro: "What the trace asked for, so a reader can see what was tested.", Blocks: blocks}, true
}

// workloadFact is one scalar (or list) of Summary.Workload, by its dotted key path.
type workloadFact struct {
	key string
	val any
}

// trafficLabels name the facts of a trace's statistics (traces.Stats) in words, in the order
// the "Traffic sent" table lists them; unit is appended to the value.
var trafficLabels = []struct{ key, label, unit string }{
	{"count", "requests", ""},
	{"requests", "requests", ""},
	{"duration_s", "span of the arrivals", " s"},
	{"rate_per_s", "mean arrival rate", " req/s"},
	{"burstiness", "burstiness (CV of the gaps between arrivals; Poisson ≈ 1)", ""},
	{"burstiness_cv", "burstiness (CV of the gaps between arrivals; Poisson ≈ 1)", ""},
	{"total_input_tokens", "input tokens, all requests", ""},
	{"total_output_tokens", "output tokens asked for, all requests", ""},
	{"prefill_decode_ratio", "input tokens per output token", ""},
	{"chat", "requests with messages (chat)", ""},
	{"with_prompt", "requests with prompt text", ""},
	{"prefix_reuse_tokens", "input tokens a prefix cache could reuse", ""},
	{"prefix_reuse", "share of input tokens a prefix cache could reuse", ""},
	{"block_tokens", "tokens per prefix block", ""},
	{"sessions", "sessions", ""},
	{"max_turn", "most turns in a session", ""},
	{"with_images", "requests with images", ""},
	{"images", "images, all requests", ""},
	{"api", "API the requests were sent to", ""},
	{"batch_size", "trace requests per call (embeddings)", ""},
}

// trafficTables lays the workload facts out as a table of what was sent (known facts in
// words, in a fixed order, then any other fact by its key) and a table of requests per class.
func trafficTables(facts []workloadFact) (*table, *table) {
	sent := &table{Caption: "Traffic sent", Numeric: true}
	byKey := map[string]any{}
	for _, f := range facts {
		byKey[f.key] = f.val
	}
	done := map[string]bool{}
	for _, l := range trafficLabels {
		v, ok := byKey[l.key]
		if !ok || done[l.key] {
			continue
		}
		done[l.key] = true
		text := scalarText(v)
		if l.key == "prefix_reuse" {
			if n, ok := v.(json.Number); ok {
				if f, err := n.Float64(); err == nil {
					text = fmtPct(f)
				}
			}
		}
		sent.add(txt(l.label), txt(text+l.unit))
		if l.key == "with_prompt" {
			// The rest of the requests carry token counts only; the client synthesized them.
			if total, ok := intFact(byKey, "count"); ok {
				chat, _ := intFact(byKey, "chat")
				prompt, _ := intFact(byKey, "with_prompt")
				if rest := total - chat - prompt; rest >= 0 {
					sent.add(txt("requests with token counts only (prompts synthesized)"), txt(fmtInt(rest)))
				}
			}
		}
	}
	var classes *table
	total, hasTotal := intFact(byKey, "count")
	if !hasTotal {
		total, hasTotal = intFact(byKey, "requests")
	}
	for _, f := range facts {
		if name, ok := strings.CutPrefix(f.key, "classes."); ok {
			if classes == nil {
				classes = &table{Caption: "Requests per class", Numeric: true, Head: []string{"class", "requests", "share"}}
			}
			share := na
			if n, ok := intFact(byKey, f.key); ok && hasTotal && total > 0 {
				share = fmtPct(float64(n) / float64(total))
			}
			classes.add(txt(name), txt(scalarText(f.val)), txt(share))
			continue
		}
		if done[f.key] {
			continue
		}
		switch x := f.val.(type) {
		case []any:
			if len(x) > 0 {
				parts := make([]string, 0, len(x))
				for _, e := range x {
					parts = append(parts, scalarText(e))
				}
				sent.add(txt(humanKey(f.key)), cell{Text: strings.Join(parts, ", "), Class: "wrap"})
			}
		default:
			sent.add(txt(humanKey(f.key)), txt(scalarText(x)))
		}
	}
	return sent, classes
}

// intFact reads an integer fact.
func intFact(byKey map[string]any, key string) (int64, bool) {
	n, ok := byKey[key].(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

// humanKey turns a JSON key path into words ("input_tokens" -> "input tokens").
func humanKey(k string) string { return strings.ReplaceAll(k, "_", " ") }

// member is one key of a JSON object decoded in order.
type member struct {
	key string
	val any
}

// decodeOrdered decodes one JSON value, keeping object keys in their order: objects become
// []member, arrays []any, numbers json.Number.
func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var obj []member
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				obj = append(obj, member{k, v})
			}
			_, err := dec.Token()
			return obj, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return tok, nil
}

// asDist recognizes an object of percentile statistics.
func asDist(obj []member) (map[string]float64, bool) {
	out := map[string]float64{}
	for _, m := range obj {
		n, ok := m.val.(json.Number)
		if !ok {
			continue
		}
		f, err := n.Float64()
		if err != nil {
			continue
		}
		for _, s := range workloadStatOrder {
			if s == m.key {
				out[m.key] = f
			}
		}
	}
	_, p50 := out["p50"]
	return out, p50 && len(out) >= 3
}

func scalarText(v any) string {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return fmtInt(i)
		}
		if f, err := x.Float64(); err == nil {
			return fmtShort(f)
		}
		return x.String()
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return na
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func workloadChart(dists []workloadDist) *chartSpec {
	c := &chartSpec{ID: "workload-lengths", Title: "Input and output lengths", YName: "tokens", YLog: true,
		Note: "per-request length statistics of the trace (log scale)"}
	var cats []string
	for _, s := range workloadStatOrder {
		for _, d := range dists {
			if _, ok := d.vals[s]; ok {
				cats = append(cats, s)
				break
			}
		}
	}
	c.XCats = cats
	t := &table{Numeric: true, Head: append([]string{"distribution"}, cats...)}
	colors := []string{colBlue, colOrange, colGreen, colPurple, colTeal}
	for i, d := range dists {
		vals := make([]any, len(cats))
		cells := []cell{txt(humanKey(d.name))}
		for j, s := range cats {
			v, ok := d.vals[s]
			switch {
			case !ok:
				vals[j] = "-"
				cells = append(cells, txt(na))
			case v <= 0:
				// A log axis cannot show zero; the table still has it.
				vals[j] = "-"
				cells = append(cells, txt(fmtShort(v)))
			default:
				vals[j] = rnd(v)
				cells = append(cells, txt(fmtShort(v)))
			}
		}
		c.Series = append(c.Series, seriesSpec{Name: humanKey(d.name), Kind: "bar", Color: colors[i%len(colors)], Data: vals})
		t.add(cells...)
	}
	c.Table = t
	return c
}

// serverSection plots the scraped server metrics.
func serverSection(sv *ServerSeries, maxPoints int) (section, bool) {
	if sv == nil || len(sv.T) == 0 {
		return section{}, false
	}
	ts := &metrics.TimeSeries{T: sv.T}
	var all [][]float64
	for _, f := range sv.fields() {
		if f.vals != nil {
			all = append(all, f.vals)
		}
	}
	idx := unionLTTB(sv.T, maxPoints, all...)
	var kv []float64
	if sv.KVCacheUsage != nil {
		kv = make([]float64, len(sv.KVCacheUsage))
		for i, v := range sv.KVCacheUsage {
			kv[i] = v * 100
		}
	}
	var charts []*chartSpec
	if sv.Running != nil || sv.Waiting != nil {
		charts = append(charts, tsChart("server-load", "Server: running and waiting requests", "as reported by the server's /metrics",
			"requests", "", ts, idx, []tsCol{{"running", sv.Running, colBlue, 0, false}, {"waiting", sv.Waiting, colOrange, 0, false}}))
	}
	if sv.KVCacheUsage != nil || sv.Preemptions != nil {
		axis := 0
		if kv != nil {
			axis = 1
		}
		charts = append(charts, tsChart("server-kv", "Server: KV cache and preemptions", "KV cache in use (left, %) and cumulative preemptions (right)",
			"% KV cache", "preemptions", ts, idx, []tsCol{{"KV cache %", kv, colPurple, 0, false}, {"preemptions", sv.Preemptions, colRed, axis, false}}))
	}
	if len(charts) == 0 {
		return section{}, false
	}
	intro := "Scraped from " + sv.Source + " during the run."
	if sv.Source == "" {
		intro = "Scraped from the endpoint's /metrics during the run."
	}
	return section{ID: "server", Title: "Server metrics", Intro: intro, Blocks: []block{{Charts: charts}}}, true
}
