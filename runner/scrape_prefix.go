package runner

import (
	"math"
	"path/filepath"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// prefixCounters are the prefix-cache counter pairs a server may export, in preference order,
// each cumulative and in tokens: vLLM V1's (vllm/v1/metrics/loggers.py, prefix_cache_hits and
// prefix_cache_queries, "_total" in the exposition), the same before their rename
// (gpu_prefix_cache_*), and SGLang's cached prompt tokens (summed over its cache_source
// label: device, host, storage) over all prompt tokens. Both SGLang counters grow when a
// request finishes, vLLM's when it is scheduled.
var prefixCounters = []struct{ backend, hits, queries string }{
	{"vllm", "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"},
	{"vllm", "vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total"},
	{"sglang", "sglang:cached_tokens_total", "sglang:prompt_tokens_total"},
}

// prefixGauges are rolling hit-rate gauges, exported by servers without the counters (vLLM's
// V0 engine; SGLang before cached_tokens_total): they say how the cache did lately, not over
// a run, and are never turned into a per-run figure.
var prefixGauges = []string{"vllm:gpu_prefix_cache_hit_rate", "sglang:cache_hit_rate"}

// backendPrefixes recognize a server family from its metric names.
var backendPrefixes = []struct{ prefix, backend string }{
	{"vllm:", "vllm"}, {"sglang:", "sglang"}, {"tgi_", "tgi"}, {"llamacpp:", "llamacpp"},
}

// prefixPick is what one scrape found about the prefix cache.
type prefixPick struct {
	hits, queries float64 // -1: no counters
	source, gauge string
	backend       string
}

func pickPrefix(m map[string]float64) prefixPick {
	p := prefixPick{hits: -1, queries: -1}
	for _, c := range prefixCounters {
		h, ok1 := m[c.hits]
		q, ok2 := m[c.queries]
		if ok1 && ok2 && counterValue(h) && counterValue(q) {
			p.hits, p.queries, p.source, p.backend = h, q, c.hits+" / "+c.queries, c.backend
			break
		}
	}
	for _, g := range prefixGauges {
		if _, ok := m[g]; ok {
			p.gauge = g
			break
		}
	}
	if p.backend == "" {
		p.backend = backendOf(m)
	}
	return p
}

// counterValue reports whether v can be a counter's value: finite and not negative.
func counterValue(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// backendOf is the server family of the first recognized metric name (in a fixed order).
func backendOf(m map[string]float64) string {
	for _, b := range backendPrefixes {
		for name := range m {
			if strings.HasPrefix(name, b.prefix) {
				return b.backend
			}
		}
	}
	return ""
}

// note records on d what the scrape found: the latest wins.
func (p prefixPick) note(d *ServerSamples) {
	if p.backend != "" {
		d.Backend = p.backend
	}
	if p.source != "" {
		d.PrefixSource = p.source
	}
	if p.gauge != "" {
		d.PrefixGauge = p.gauge
	}
}

// serverPrefixCache is the server's prefix-cache hit rate over [startS, endS] (seconds from
// the run epoch: the summary's steady window) from the scraped counters, or, where the server
// has none, a note saying so in words.
func serverPrefixCache(d ServerSamples, startS, endS float64) *metrics.ServerPrefixCache {
	if len(d.Samples) == 0 {
		note := "no scrape of the server's /metrics succeeded"
		if d.LastError != "" {
			note += " (" + d.LastError + ")"
		}
		return &metrics.ServerPrefixCache{Note: note}
	}
	var pts []metrics.PrefixCounterPoint
	for _, s := range d.Samples {
		if s.PrefixHits >= 0 && s.PrefixQueries >= 0 {
			pts = append(pts, metrics.PrefixCounterPoint{T: s.T, Hits: s.PrefixHits, Queries: s.PrefixQueries})
		}
	}
	if len(pts) == 0 {
		return &metrics.ServerPrefixCache{Backend: d.Backend, Note: noPrefixCountersNote(d.Backend, d.PrefixGauge)}
	}
	return metrics.ServerPrefixCacheDelta(d.Backend, d.PrefixSource, pts, startS, endS)
}

// noPrefixCountersNote says, per backend, why there is no per-run server hit rate.
func noPrefixCountersNote(backend, gauge string) string {
	const none = "; no per-run delta"
	switch {
	case gauge == "sglang:cache_hit_rate":
		return "SGLang exports only a rolling hit rate gauge (sglang:cache_hit_rate), not the sglang:cached_tokens_total counter" + none
	case gauge != "":
		return "vLLM exports only a rolling hit rate gauge (" + gauge + ", V0 engine), not the prefix_cache_hits/queries counters" + none
	case backend == "vllm":
		return "vLLM exports no prefix-cache counters (vllm:prefix_cache_hits_total / queries_total)" + none
	case backend == "sglang":
		return "SGLang exports no prefix-cache counters (sglang:cached_tokens_total)" + none
	case backend == "llamacpp":
		return "llama.cpp's server exports no prefix-cache counters (its /metrics counts prompt tokens processed, not reused)" + none
	case backend == "tgi":
		return "TGI exports no prefix-cache counters" + none
	}
	return "the server's /metrics has no prefix-cache counters llmbench knows (vLLM's, SGLang's)" + none
}

// mergedServerPrefixCache is the merged run's server prefix cache over [startS, endS] (seconds
// from the merged epoch) from the shards' server-metrics.json, or, where a shard scraped
// workers (scrape_workers.go), their server-metrics-workers.json; nil when no shard scraped
// (metrics.MergeServerPrefixCache). A shard's sample times move by its shift onto the epoch.
func mergedServerPrefixCache(parts []*mergePart, startS, endS float64) *metrics.ServerPrefixCache {
	var shards []metrics.ServerPrefixShard
	for _, p := range parts {
		shift := float64(p.shift) / 1e9
		var workers []ServerSamples
		if readJSONFile(filepath.Join(p.dir, WorkersScrapeFile), &workers) == nil && len(workers) > 0 {
			for _, w := range workers {
				shards = append(shards, prefixShard(w, shift, startS, endS))
			}
			continue
		}
		if d, err := readServerSamples(filepath.Join(p.dir, ScrapeFile)); err == nil {
			shards = append(shards, prefixShard(*d, shift, startS, endS))
		}
	}
	return metrics.MergeServerPrefixCache(shards, startS, endS)
}
