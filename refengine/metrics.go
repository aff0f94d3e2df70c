package refengine

import (
	"net/http"
	"sort"
	"strconv"
	"time"
)

// histogram is a Prometheus histogram with fixed upper bounds (seconds).
type histogram struct {
	bounds []float64
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	count  uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64, n uint64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i] += n
	h.sum += v * float64(n)
	h.count += n
}

// histograms are the engine's latency histograms, in simulated seconds, with vLLM's buckets.
type histograms struct {
	ttft, itl, e2e, queue, tpot *histogram
}

func newHistograms() *histograms {
	return &histograms{
		ttft:  newHistogram([]float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}),
		itl:   newHistogram([]float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}),
		e2e:   newHistogram([]float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}),
		queue: newHistogram([]float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}),
		tpot:  newHistogram([]float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}),
	}
}

func (h *histograms) firstToken(d time.Duration) { h.ttft.observe(d.Seconds(), 1) }

// interToken records the gap before an emission of tokens tokens: the first token of the chunk
// waited gap, the others arrived with it (0), as vLLM counts per-token latency.
func (h *histograms) interToken(gap time.Duration, tokens int) {
	h.itl.observe(gap.Seconds(), 1)
	if tokens > 1 {
		h.itl.observe(0, uint64(tokens-1))
	}
}

func (h *histograms) queued(d time.Duration) { h.queue.observe(d.Seconds(), 1) }

// finished records a request's end-to-end latency and, with more than one output token, its
// time per output token after the first (vLLM's TPOT).
func (h *histograms) finished(e2e, decode time.Duration, outputTokens int) {
	h.e2e.observe(e2e.Seconds(), 1)
	if outputTokens > 1 {
		h.tpot.observe(decode.Seconds()/float64(outputTokens-1), 1)
	}
}

// promWriter appends Prometheus text exposition.
type promWriter struct {
	b     []byte
	label string // {model_name="…"}
}

func (p *promWriter) header(name, typ, help string) {
	p.b = append(p.b, "# HELP "...)
	p.b = append(p.b, name...)
	p.b = append(p.b, ' ')
	p.b = append(p.b, help...)
	p.b = append(p.b, "\n# TYPE "...)
	p.b = append(p.b, name...)
	p.b = append(p.b, ' ')
	p.b = append(p.b, typ...)
	p.b = append(p.b, '\n')
}

func (p *promWriter) value(name, extraLabel string, v float64) {
	p.b = append(p.b, name...)
	p.b = append(p.b, '{')
	p.b = append(p.b, p.label...)
	if extraLabel != "" {
		p.b = append(p.b, ',')
		p.b = append(p.b, extraLabel...)
	}
	p.b = append(p.b, "} "...)
	p.b = strconv.AppendFloat(p.b, v, 'g', -1, 64)
	p.b = append(p.b, '\n')
}

func (p *promWriter) gauge(name, help string, v float64) {
	p.header(name, "gauge", help)
	p.value(name, "", v)
}

func (p *promWriter) counter(name, help string, v float64) {
	p.header(name, "counter", help)
	p.value(name+"_total", "", v)
}

func (p *promWriter) histogram(name, help string, h *histogram) {
	p.header(name, "histogram", help)
	var cum uint64
	for i, ub := range h.bounds {
		cum += h.counts[i]
		p.value(name+"_bucket", `le="`+strconv.FormatFloat(ub, 'g', -1, 64)+`"`, float64(cum))
	}
	cum += h.counts[len(h.bounds)]
	p.value(name+"_bucket", `le="+Inf"`, float64(cum))
	p.value(name+"_sum", "", h.sum)
	p.value(name+"_count", "", float64(h.count))
}

// metricsText renders /metrics. Latencies are in simulated seconds (GPU time).
func (e *Engine) metricsText() []byte {
	p := &promWriter{label: `model_name=` + string(appendJSONString(nil, e.cfg.ServedModelName))}
	e.mu.Lock()
	defer e.mu.Unlock()
	cl := e.cl
	st := cl.stats()
	used, total := 0, 0
	for _, pl := range cl.pools {
		used += pl.c.pool.used()
		total += pl.c.pool.numBlocks()
	}
	p.gauge("vllm:num_requests_running", "Number of requests in model execution batches.", float64(cl.running()))
	p.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", float64(cl.waiting()+len(e.incoming)))
	p.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", float64(used)/float64(total))
	p.gauge("llmbench:kv_cache_num_blocks", "KV cache capacity in blocks (all pools).", float64(total))
	p.counter("vllm:num_preemptions", "Cumulative number of preemptions from the engine.", float64(st.Preemptions))
	p.counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", float64(st.PrefixQueries))
	p.counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", float64(st.PrefixHits))
	p.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", float64(st.PromptTokens))
	p.counter("vllm:generation_tokens", "Number of generation tokens processed.", float64(st.GenerationTokens))
	p.counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", float64(st.SpecPasses))
	p.counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", float64(st.SpecDraftTokens))
	p.counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", float64(st.SpecAccepted))
	e.specPerPos(p, st.SpecAcceptedPos[:])
	p.counter("vllm:request_success", "Count of successfully processed requests.", float64(st.FinishedRequests))
	// Cancellations (issue 38): every abort frees the sequence's KV blocks and its slot at once
	// (sched.go abortSeq), so running, waiting and KV usage above show the recovery.
	p.counter("llmbench:requests_aborted", "Requests aborted before they finished (the client went away, an injected fault ended them, or the prompt could never fit the KV cache); their KV blocks and slots are freed.", float64(st.AbortedRequests+e.abortedIncoming))
	p.counter("llmbench:engine_steps", "Engine iterations run.", float64(st.Steps))
	p.gauge("llmbench:engine_max_lag_seconds", "Longest the scheduler ran behind its clock (simulated seconds).", e.maxLag.Seconds())
	e.loraMetrics(p, st) // LoRA adapters (issue 38)
	if fc := e.FaultsInjected(); len(fc) > 0 {
		p.header("llmbench:faults_injected_total", "counter", "Faults injected into responses, by kind.")
		kinds := make([]string, 0, len(fc))
		for k := range fc {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			p.value("llmbench:faults_injected_total", `fault="`+k+`"`, float64(fc[k]))
		}
	}
	p.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", e.hist.ttft)
	p.histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", e.hist.itl)
	p.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", e.hist.e2e)
	p.histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", e.hist.queue)
	p.histogram("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", e.hist.tpot)
	if r, ok := e.powerLocked(); ok {
		p.b = appendDCGM(p.b, r) // issue 39: the modelled GPU power under dcgm-exporter's names
	}
	return p.b
}

func (e *Engine) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(e.metricsText())
}

// specPerPos writes vLLM's per-position accepted-token counter (issue 38), one series per draft
// position of the engine's k: how many passes accepted the draft token at that position, so
// that position i's acceptance is its count over spec_decode_num_drafts.
func (e *Engine) specPerPos(p *promWriter, pos []int64) {
	k := min(e.cfg.SpecK, len(pos))
	if k == 0 {
		return
	}
	const name = "vllm:spec_decode_num_accepted_tokens_per_pos"
	p.header(name, "counter", "Accepted tokens per draft position.")
	for i := 0; i < k; i++ {
		p.value(name+"_total", `position="`+strconv.Itoa(i)+`"`, float64(pos[i]))
	}
}
