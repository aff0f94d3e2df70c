package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmbench/llmbench/metrics"
)

// Per-worker scraping (issue 34, run --scrape-workers): behind a router, each worker keeps its
// own prefix cache and counters. The run polls every worker's /metrics like the endpoint's
// (scrape.go), saves the samples to server-metrics-workers.json, and the summary's
// server_prefix_cache is then the workers' combined delta with each worker's share
// (metrics.MergeServerPrefixCache): a router that spreads a group over workers shows as
// workers with lower rates.

// WorkersScrapeFile holds the workers' samples, one ServerSamples per worker in the order
// given.
const WorkersScrapeFile = "server-metrics-workers.json"

// startWorkerScrapers starts one scraper per worker base URL, with the target's key and
// headers (a worker behind the same router takes the same credentials).
func startWorkerScrapers(ctx context.Context, s HTTPRun) []*scraper {
	var out []*scraper
	for _, u := range s.ScrapeWorkers {
		out = append(out, startScraper(ctx, scrapeOptions{URL: u, APIKey: s.Load.Target.APIKey, Headers: s.Load.Target.Headers, TimeScale: s.TimeScale}))
	}
	return out
}

// stopWorkerScrapers stops the workers' scrapers after the run, puts their times on the
// run's epoch and writes their samples; it returns perr, else the write's error.
func stopWorkerScrapers(opts Options, prod *Produced, perr error) error {
	if len(opts.workers) == 0 {
		return perr
	}
	data := make([]ServerSamples, len(opts.workers))
	for i, w := range opts.workers {
		w.Stop()
		if prod != nil && !prod.Start.IsZero() {
			w.SetEpoch(prod.Start)
		}
		data[i] = w.Data()
	}
	if err := WriteJSON(filepath.Join(opts.OutDir, WorkersScrapeFile), data); err != nil && perr == nil {
		perr = fmt.Errorf("%s: %w", WorkersScrapeFile, err)
	}
	return perr
}

// workersPrefixCache is the workers' combined prefix-cache delta over [startS, endS].
func workersPrefixCache(workers []*scraper, startS, endS float64) *metrics.ServerPrefixCache {
	var shards []metrics.ServerPrefixShard
	for _, w := range workers {
		shards = append(shards, prefixShard(w.Data(), 0, startS, endS))
	}
	return metrics.MergeServerPrefixCache(shards, startS, endS)
}

// prefixShard is d's prefix-cache counters, their times moved by shiftS seconds.
func prefixShard(d ServerSamples, shiftS, startS, endS float64) metrics.ServerPrefixShard {
	s := metrics.ServerPrefixShard{Endpoint: d.Endpoint, Backend: d.Backend, Source: d.PrefixSource}
	for _, smp := range d.Samples {
		if smp.PrefixHits >= 0 && smp.PrefixQueries >= 0 {
			s.Points = append(s.Points, metrics.PrefixCounterPoint{T: smp.T + shiftS, Hits: smp.PrefixHits, Queries: smp.PrefixQueries})
		}
	}
	if len(s.Points) == 0 {
		s.Note = serverPrefixCache(d, startS, endS).Note
	}
	return s
}

// readJSONFile decodes the JSON file at path into v.
func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
